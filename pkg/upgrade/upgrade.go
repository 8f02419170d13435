package upgrade

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/inventory"
)

// Phase names, stable for events and logs.
const (
	PhaseCheck        = "upgrade/check"
	PhasePlan         = "upgrade/plan"
	PhaseEtcdSnapshot = "upgrade/etcd-snapshot"
	PhaseRollout      = "upgrade/rollout"
	PhaseCordon       = "upgrade/cordon"
	PhaseDrain        = "upgrade/drain"
	PhaseStop         = "upgrade/stop-gpu-consumers"
	PhaseGPUs         = "upgrade/gpus"
	PhaseUncordon     = "upgrade/uncordon"
)

// Options are the rollout's choices.
type Options struct {
	Budget Budget
	// Canary nodes make the first wave; the rollout goes on only if every
	// one of them verified.
	Canary int
	// Named are the hosts asked for (--hosts); empty: every GPU host. A
	// named node is upgraded even when someone else cordoned it.
	Named []string
	// Selector picks nodes by label (--selector).
	Selector labels.Selector
	// WaitForJobs is how long a node's training pods are waited for
	// before the node is left alone.
	WaitForJobs time.Duration
	// Force evicts training pods (after their checkpoint hook) and lets
	// the upgrade end processes computing on the GPUs outside the cluster.
	Force bool
	// ContinueOnFailure goes on after a node failed (it stays cordoned and
	// counts against the budget).
	ContinueOnFailure bool
	Drain             DrainOptions
	// GPUTimeout bounds the wait for a node's GPUs to be advertised again.
	GPUTimeout time.Duration
	// SkipEtcdSnapshot leaves the snapshot out.
	SkipEtcdSnapshot bool
	// What names the change in the rollout's title and its nothing-to-do
	// reason ("" is the driver's: `gpukit upgrade driver`).
	What, Converged string
	// ReadyOnly waits for a node to be Ready again, not for as many GPUs
	// as it advertised before (a MIG layout changes what it advertises).
	ReadyOnly bool
	// EveryNode is a change of the cluster itself (its Kubernetes
	// version): every node takes part, GPU or not; the control planes go
	// first, one at a time and in the inventory's order, and no worker
	// starts before all of them are done; the budget counts every worker.
	EveryNode bool
	// Snapshot names the etcd snapshot taken before the first node
	// (before-<Snapshot>-<time>.db); "" with What set: none is taken (the
	// change does not touch the cluster's state).
	Snapshot string
	// KubeletVersion is the version (vX.Y.Z) a node's kubelet must report
	// before the node is given back; "": any.
	KubeletVersion string
	// Before are change phases a node goes through before it is cordoned
	// and drained (kubeadm upgrade apply and node, which kubeadm runs on a
	// node still in service: its health check schedules a pod on a
	// control plane).
	Before []engine.Phase
	// State is the rollout's record; nil in a dry-run.
	State *State
	// Poll overrides the API waits' interval (tests).
	Poll time.Duration
}

// Upgrade is one rollout: the phases of `gpukit upgrade driver` around the
// NVIDIA layer's, and the decisions they share.
type Upgrade struct {
	inv     *inventory.Inventory
	o       Options
	connect Connect
	target  func([]*engine.Host) []*engine.Host
	nvidia  []engine.Phase // the NVIDIA layer's phases that change a host, in order
	verify  []engine.Phase // what proves a host's change, in order
	now     func() time.Time
	counter *Counter

	mu       sync.Mutex
	orch     Orchestrator
	apiHost  string              // the host the orchestrator is reached through
	nodes    map[string]Node     // host -> its node, as plan listed it
	pending  map[string][]string // host -> the NVIDIA phases it needs
	ours     map[string]bool     // host -> cordoned by a gpukit upgrade before this run
	left     map[string]string   // host -> why the wave leaves it (training)
	budget   int
	gpuNodes int
	waves    int
	seen     int      // outcomes next has recorded
	stopped  string   // why the rollout stopped early ("": it did not)
	notTaken []string // nodes left out that still need the upgrade (someone else's cordon)
	snapshot string
	planned  []string // hosts in the order the rollout takes them
	skips    map[string]string
	finished map[string]bool // hosts whose wave ended without failure or being left
	cpNodes  map[string]bool // the control planes' node names, as plan named them
}

// New returns the rollout for inv: connect reaches the cluster's
// orchestrator from the host target picks; change are the NVIDIA layer's
// phases that change a host (prepare to reboot), which the check asks
// whether anything is to do, and verify what proves the change (the NVIDIA
// layer's verification, then what the orchestrator's runtime needs).
func New(inv *inventory.Inventory, connect Connect, target func([]*engine.Host) []*engine.Host, change, verify []engine.Phase, o Options) *Upgrade {
	return &Upgrade{inv: inv, o: o, connect: connect, target: target, nvidia: change, verify: verify, now: time.Now,
		nodes: map[string]Node{}, pending: map[string][]string{}, ours: map[string]bool{},
		left: map[string]string{}, skips: map[string]string{}, finished: map[string]bool{}, counter: &Counter{}}
}

// Counter counts the API requests of a run (for the benchmark).
type Counter struct {
	mu sync.Mutex
	n  int
}

func (c *Counter) add() { c.mu.Lock(); c.n++; c.mu.Unlock() }

// N is the count so far.
func (c *Counter) N() int { c.mu.Lock(); defer c.mu.Unlock(); return c.n }

// APIRequests counts the requests the rollout made to the API.
func (u *Upgrade) APIRequests() int { return u.counter.N() }

// Snapshot is the etcd snapshot's path on the control plane, once taken.
func (u *Upgrade) Snapshot() string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.snapshot
}

// Order is the hosts in the order the rollout took them (or, in a dry-run,
// would take them).
func (u *Upgrade) Order() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.Clone(u.planned)
}

// Complete says whether the rollout reached every node it was asked for:
// it did not stop early, left no node for its training, and found none
// cordoned by someone else. Failed hosts are the run summary's to say.
func (u *Upgrade) Complete() bool { return len(u.Unfinished()) == 0 }

// Unfinished says why the rollout is not complete, a line per reason (none:
// it is): where it stopped, the nodes left for their training, those
// someone else cordoned.
func (u *Upgrade) Unfinished() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	var out []string
	if u.stopped != "" {
		out = append(out, u.stopped)
	}
	for _, name := range slices.Sorted(maps.Keys(u.left)) {
		out = append(out, name+": "+u.left[name])
	}
	for _, name := range u.notTaken {
		out = append(out, name+": "+cordonedElsewhere)
	}
	return out
}

// Waves is the number of waves the rollout ran.
func (u *Upgrade) Waves() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.waves
}

func (u *Upgrade) node(h *engine.Host) string { return u.client().NodeName(h.Machine) }

// counts says whether n counts against the budget: a GPU node; with
// EveryNode, a worker (the control planes go one at a time, apart).
func (u *Upgrade) counts(cps map[string]bool, n Node) bool {
	if !u.o.EveryNode {
		return n.GPU
	}
	return !cps[n.Name]
}

// client is the orchestrator plan reached.
func (u *Upgrade) client() Orchestrator {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.orch
}

// poll is how often the rollout's waits look again.
func (u *Upgrade) poll() time.Duration {
	if u.o.Poll > 0 {
		return u.o.Poll
	}
	return 2 * time.Second
}

// record notes a node's progress in the state (none in a dry-run).
func (u *Upgrade) record(name, status, reason string) error {
	if u.o.State == nil {
		return nil
	}
	return u.o.State.Set(name, status, reason, u.now())
}

// Phases are the rollout's, in order.
func (u *Upgrade) Phases() []engine.Phase {
	title := "Upgrade the GPU nodes, a wave at a time"
	switch {
	case u.o.EveryNode:
		title = "Upgrade the nodes' " + u.o.What + ": the control planes one at a time, then the workers a wave at a time"
	case u.o.What != "":
		title = "Change the GPU nodes' " + u.o.What + ", a wave at a time"
	}
	ro := &engine.Rollout{
		Name: PhaseRollout, Title: title,
		Next: u.next,
		Leave: func(h *engine.Host) string {
			u.mu.Lock()
			defer u.mu.Unlock()
			return u.left[h.Name()]
		},
	}
	ro.Phases = append(ro.Phases, u.o.Before...)
	ro.Phases = append(ro.Phases, &cordonPhase{u}, &drainPhase{u})
	if !u.o.EveryNode { // the cluster's own upgrade leaves the GPUs' consumers be
		ro.Phases = append(ro.Phases, &stopPhase{u})
	}
	ro.Phases = append(ro.Phases, u.nvidia...)
	ro.Phases = append(ro.Phases, u.verify...)
	ro.Phases = append(ro.Phases, &gpusPhase{u}, &uncordonPhase{u})
	if u.inv.Cluster.Spec.Orchestrator == inventory.Swarm || (u.o.What != "" && u.o.Snapshot == "") {
		// A MIG layout does not touch the cluster's state either.
		// A swarm keeps its state in the managers' raft log, which every
		// manager holds; a driver change does not touch it.
		return []engine.Phase{&checkPhase{u}, &planPhase{u}, ro.Phase()}
	}
	return []engine.Phase{&checkPhase{u}, &planPhase{u}, &snapshotPhase{u}, ro.Phase()}
}

// ---- upgrade/check: what each host needs, read by the NVIDIA layer

type checkPhase struct{ u *Upgrade }

func (*checkPhase) Name() string { return PhaseCheck }
func (p *checkPhase) Title() string {
	if p.u.o.EveryNode {
		return "Check what each host needs"
	}
	return "Check what each GPU host needs"
}

func (p *checkPhase) Targets(hosts []*engine.Host) []*engine.Host {
	if len(p.u.o.Named) == 0 {
		return hosts
	}
	var out []*engine.Host
	for _, h := range hosts {
		if slices.Contains(p.u.o.Named, h.Name()) {
			out = append(out, h)
		}
	}
	return out
}

func (p *checkPhase) Run(ctx context.Context, h *engine.Host) error {
	var todo []string
	for _, ph := range append(slices.Clone(p.u.o.Before), p.u.nvidia...) {
		s, ok := ph.(engine.ShouldRunner)
		if !ok {
			todo = append(todo, ph.Name())
			continue
		}
		run, why, err := s.ShouldRun(ctx, h)
		if err != nil {
			return fmt.Errorf("%s: %w", ph.Name(), err)
		}
		if why == "no NVIDIA GPU on this host" {
			p.u.mu.Lock()
			p.u.skips[h.Name()] = why
			p.u.mu.Unlock()
			return nil
		}
		if run {
			todo = append(todo, ph.Name())
		}
	}
	p.u.mu.Lock()
	defer p.u.mu.Unlock()
	if len(todo) == 0 {
		p.u.skips[h.Name()] = cmp.Or(p.u.o.Converged, "the driver, CUDA and the container toolkit are as asked")
		h.Logf("%s: nothing to change", PhaseCheck)
		return nil
	}
	p.u.pending[h.Name()] = todo
	h.Logf("%s: to do: %s", PhaseCheck, strings.Join(todo, ", "))
	return nil
}

// ---- upgrade/plan: the nodes, the budget, the order

type planPhase struct{ u *Upgrade }

func (*planPhase) Name() string  { return PhasePlan }
func (*planPhase) Title() string { return "Plan the rollout (nodes, budget, order)" }

func (p *planPhase) Targets(hosts []*engine.Host) []*engine.Host { return p.u.target(hosts) }

func (p *planPhase) Run(ctx context.Context, h *engine.Host) error {
	o, err := p.u.connect(ctx, h, p.u.counter.add)
	if err != nil {
		return err
	}
	list, err := o.Nodes(ctx)
	if err != nil {
		return err
	}
	// The control planes' nodes, named once: the budget and every wave
	// ask.
	cps := map[string]bool{}
	for _, m := range p.u.inv.Machines {
		if m.HasRole(inventory.RoleControlPlane) {
			cps[o.NodeName(m)] = true
		}
	}
	byName := map[string]Node{}
	gpuNodes := 0
	for _, n := range list {
		byName[n.Name] = n
		if p.u.counts(cps, n) {
			gpuNodes++
		}
	}
	u := p.u
	u.mu.Lock()
	defer u.mu.Unlock()
	u.orch, u.apiHost, u.cpNodes = o, h.Name(), cps
	u.gpuNodes = gpuNodes
	u.budget = u.o.Budget.Of(gpuNodes)
	for _, m := range u.inv.Machines {
		if n, ok := byName[o.NodeName(m)]; ok {
			u.nodes[m.Name] = n
			if n.Ours {
				u.ours[m.Name] = true
			}
		}
	}
	what := "GPU nodes"
	if u.o.EveryNode {
		what = "workers"
	}
	h.Logf("%s: %d %s in the cluster, at most %d out of service at once (--max-unavailable %s)", PhasePlan, gpuNodes, what, u.budget, u.o.Budget)
	return nil
}
