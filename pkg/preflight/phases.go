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
	"github.com/gpukit/gpukit/pkg/probe"
)

// Phase names, stable for --skip-phases / --only-phases and `init phase`.
const (
	PhaseFacts   = "preflight/facts"
	PhaseChecks  = "preflight/checks"
	PhaseCluster = "preflight/cluster"
)

// Preflight gathers facts on every host and judges them, in three phases
// (Facts, HostChecks, ClusterChecks) that a command lists in that order. The
// facts travel on the hosts (engine.Host.Facts) and come back in the run's
// summary; Preflight itself only keeps the check results for the report.
type Preflight struct {
	inv *inventory.Inventory

	mu      sync.Mutex
	results map[string][]Result
}

// New returns the preflight of inv.
func New(inv *inventory.Inventory) *Preflight {
	return &Preflight{inv: inv, results: map[string][]Result{}}
}

// Facts is the phase that probes each host in one round trip.
func (p *Preflight) Facts() engine.Phase { return factsPhase{} }

// HostChecks is the phase that judges each host's facts against the
// inventory. A failed check fails its host and stops the run (init must not
// build on a host that failed preflight).
func (p *Preflight) HostChecks() engine.Phase { return &checksPhase{p} }

// ClusterChecks is the phase that compares the hosts (unique hostnames,
// product_uuid, machine-id); like HostChecks, a failure stops the run.
func (p *Preflight) ClusterChecks() engine.Phase { return &clusterPhase{p: p} }

type factsPhase struct{}

func (factsPhase) Name() string    { return PhaseFacts }
func (factsPhase) HostLocal() bool { return true }
func (factsPhase) Title() string   { return "Gather host facts" }

func (factsPhase) Run(ctx context.Context, h *engine.Host) error {
	_, err := probe.Facts(ctx, h)
	return err
}

type checksPhase struct{ p *Preflight }

func (*checksPhase) Name() string           { return PhaseChecks }
func (*checksPhase) HostLocal() bool        { return true }
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

// clusterPhase compares every host's facts once (Prepare), then reports
// each host's share of the findings.
type clusterPhase struct {
	p      *Preflight
	byHost map[string][]Result // written by Prepare, read by Run
}

func (*clusterPhase) Name() string           { return PhaseCluster }
func (*clusterPhase) Title() string          { return "Compare hosts" }
func (*clusterPhase) StopRunOnFailure() bool { return true }

func (ph *clusterPhase) Prepare(_ context.Context, all, _ []*engine.Host) error {
	byHost := make(map[string]*facts.Facts, len(all))
	for _, h := range all {
		if h.Facts != nil {
			byHost[h.Name()] = h.Facts
		}
	}
	ph.byHost = map[string][]Result{}
	for _, r := range CheckCluster(byHost) {
		ph.byHost[r.Host] = append(ph.byHost[r.Host], r)
	}
	return nil
}

func (ph *clusterPhase) Run(_ context.Context, h *engine.Host) error {
	rs := ph.byHost[h.Name()]
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

// Report assembles the results of the run sum describes, host by host in
// the run's order: facts from the summary, checks from the phases. A host the
// run failed without any failed check (unreachable, probe error) is reported
// failed with that error.
func (p *Preflight) Report(sum *engine.Summary) Report {
	p.mu.Lock()
	defer p.mu.Unlock()
	var rep Report
	for _, res := range sum.Hosts {
		hr := HostReport{Host: res.Host, Address: res.Address, Facts: res.Facts, Checks: p.results[res.Host], Status: Pass}
		for _, r := range hr.Checks {
			hr.Status = worse(hr.Status, r.Status)
		}
		if res.Status == engine.StatusFailed && hr.Status != Fail {
			hr.Status = Fail
			if res.Err != nil {
				hr.Error = res.Err.Error()
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
