package preflight

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/facts"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/scripts"
	"github.com/gpukit/gpukit/pkg/ssh"
)

// Phase names, stable for --skip-phases / --only-phases and `init phase`.
const (
	PhaseFacts   = "preflight/facts"
	PhaseChecks  = "preflight/checks"
	PhaseCluster = "preflight/cluster"
)

// Preflight gathers facts on every host and judges them. Its phases share
// this struct: the cluster-wide checks need every host's facts, and phase
// order is the barrier between gathering and comparing.
type Preflight struct {
	inv *inventory.Inventory

	mu      sync.Mutex
	facts   map[string]*facts.Facts
	results map[string][]Result

	clusterOnce sync.Once
	cluster     map[string][]Result
}

// New returns the preflight of inv.
func New(inv *inventory.Inventory) *Preflight {
	return &Preflight{inv: inv, facts: map[string]*facts.Facts{}, results: map[string][]Result{}}
}

// Phases are probe, per-host checks and cluster checks, in that order. A
// failed check fails its host, and stops any run these phases start (init
// must not build on a host that failed preflight).
func (p *Preflight) Phases() []engine.Phase {
	return []engine.Phase{&factsPhase{p}, &checksPhase{p}, &clusterPhase{p}}
}

type factsPhase struct{ p *Preflight }

func (*factsPhase) Name() string  { return PhaseFacts }
func (*factsPhase) Title() string { return "Gather host facts" }

// Run probes the host in one round trip. It runs as root because
// product_uuid and some /sys entries are root-only.
func (ph *factsPhase) Run(ctx context.Context, h *engine.Host) error {
	res, err := h.Run(ctx, "probe", ssh.Command{Name: "probe facts", Script: scripts.Probe(), Sudo: true})
	if err != nil {
		return err
	}
	f, err := facts.Parse(res.Stdout)
	if err != nil {
		return err
	}
	h.Facts = f
	ph.p.mu.Lock()
	ph.p.facts[h.Name()] = f
	ph.p.mu.Unlock()
	return nil
}

type checksPhase struct{ p *Preflight }

func (*checksPhase) Name() string           { return PhaseChecks }
func (*checksPhase) Title() string          { return "Check host readiness" }
func (*checksPhase) StopRunOnFailure() bool { return true }

func (ph *checksPhase) Run(_ context.Context, h *engine.Host) error {
	if h.Facts == nil {
		return fmt.Errorf("no facts: phase %s did not run", PhaseFacts)
	}
	rs := CheckHost(ph.p.inv, h.Machine, h.Facts)
	ph.p.record(h, rs)
	return failures(rs)
}

type clusterPhase struct{ p *Preflight }

func (*clusterPhase) Name() string           { return PhaseCluster }
func (*clusterPhase) Title() string          { return "Compare hosts" }
func (*clusterPhase) StopRunOnFailure() bool { return true }

func (ph *clusterPhase) Run(_ context.Context, h *engine.Host) error {
	ph.p.clusterOnce.Do(func() {
		ph.p.mu.Lock()
		byHost := make(map[string]*facts.Facts, len(ph.p.facts))
		for k, v := range ph.p.facts {
			byHost[k] = v
		}
		ph.p.mu.Unlock()
		ph.p.cluster = map[string][]Result{}
		for _, r := range CheckCluster(byHost) {
			ph.p.cluster[r.Host] = append(ph.p.cluster[r.Host], r)
		}
	})
	rs := ph.p.cluster[h.Name()]
	ph.p.record(h, rs)
	return failures(rs)
}

func (p *Preflight) record(h *engine.Host, rs []Result) {
	for _, r := range rs {
		h.Logf("check %-20s %-4s %s", r.Check, r.Status, r.Reason)
	}
	p.mu.Lock()
	p.results[h.Name()] = append(p.results[h.Name()], rs...)
	p.mu.Unlock()
}

// failures turns failed checks into the host's error.
func failures(rs []Result) error {
	var failed []string
	for _, r := range rs {
		if r.Status == Fail {
			failed = append(failed, r.Check+": "+r.Reason)
		}
	}
	switch len(failed) {
	case 0:
		return nil
	case 1:
		return fmt.Errorf("check failed: %s", failed[0])
	default:
		return fmt.Errorf("%d checks failed: %s", len(failed), strings.Join(failed, "; "))
	}
}

// HostReport is everything preflight learned about one host.
type HostReport struct {
	Host    string       `json:"host"`
	Address string       `json:"address"`
	Status  Status       `json:"status"`
	Error   string       `json:"error,omitempty"`
	Facts   *facts.Facts `json:"facts,omitempty"`
	Checks  []Result     `json:"checks"`
}

// Report is the outcome of a preflight run, in inventory order.
type Report struct {
	Hosts []HostReport `json:"hosts"`
}

// Report assembles the results. A host the run failed without any failed
// check (unreachable, probe error) is reported failed with that error.
func (p *Preflight) Report(sum *engine.Summary) Report {
	p.mu.Lock()
	defer p.mu.Unlock()
	var rep Report
	for _, m := range p.inv.Machines {
		hr := HostReport{Host: m.Name, Address: m.Address, Facts: p.facts[m.Name], Checks: p.results[m.Name], Status: Pass}
		for _, r := range hr.Checks {
			hr.Status = worse(hr.Status, r.Status)
		}
		if sum != nil {
			if res, ok := sum.Host(m.Name); ok && res.Status == engine.StatusFailed && hr.Status != Fail {
				hr.Status = Fail
				if res.Err != nil {
					hr.Error = res.Err.Error()
				}
			}
		}
		sort.SliceStable(hr.Checks, func(i, j int) bool { return rank(hr.Checks[i].Status) > rank(hr.Checks[j].Status) })
		rep.Hosts = append(rep.Hosts, hr)
	}
	return rep
}

func rank(s Status) int {
	switch s {
	case Fail:
		return 2
	case Warn:
		return 1
	}
	return 0
}

func worse(a, b Status) Status {
	if rank(b) > rank(a) {
		return b
	}
	return a
}

// Counts returns how many hosts passed, warned and failed.
func (r Report) Counts() (pass, warn, fail int) {
	for _, h := range r.Hosts {
		switch h.Status {
		case Pass:
			pass++
		case Warn:
			warn++
		default:
			fail++
		}
	}
	return pass, warn, fail
}
