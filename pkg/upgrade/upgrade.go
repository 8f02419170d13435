package upgrade

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"

	"github.com/gpukit/gpukit/pkg/bootstrap/kubeadm"
	"github.com/gpukit/gpukit/pkg/charts"
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

// API reaches the cluster from a host of the run: the first control plane
// (kubeadm's layer, through its SSH connection), or this machine with a
// kubeconfig (kubeflow.KubeconfigAPI).
type API interface {
	Helm(ctx context.Context, h *engine.Host) (*charts.Client, error)
}

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
	api     API
	target  func([]*engine.Host) []*engine.Host
	nvidia  []engine.Phase // the NVIDIA layer's phases that change a host, in order
	verify  engine.Phase
	now     func() time.Time
	counter *Counter

	mu       sync.Mutex
	kube     *Kube
	nodes    map[string]*corev1.Node // host -> its node, as plan listed it
	pending  map[string][]string     // host -> the NVIDIA phases it needs
	ours     map[string]bool         // host -> cordoned by a gpukit upgrade before this run
	left     map[string]string       // host -> why the wave leaves it (training)
	budget   int
	gpuNodes int
	waves    int
	seen     int      // outcomes next has recorded
	stopped  string   // why the rollout stopped early ("": it did not)
	notTaken []string // nodes left out that still need the upgrade (someone else's cordon)
	snapshot string
	planned  []string // hosts in the order the rollout takes them
	skips    map[string]string
}

// New returns the rollout for inv: api reaches the cluster from the host
// target picks; change are the NVIDIA layer's phases that change a host
// (prepare to reboot), which the check asks whether anything is to do, and
// verify its verification.
func New(inv *inventory.Inventory, api API, target func([]*engine.Host) []*engine.Host, change []engine.Phase, verify engine.Phase, o Options) *Upgrade {
	return &Upgrade{inv: inv, o: o, api: api, target: target, nvidia: change, verify: verify, now: time.Now,
		nodes: map[string]*corev1.Node{}, pending: map[string][]string{}, ours: map[string]bool{},
		left: map[string]string{}, skips: map[string]string{}, counter: &Counter{}}
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
func (u *Upgrade) Complete() bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.stopped == "" && len(u.left) == 0 && len(u.notTaken) == 0
}

// Waves is the number of waves the rollout ran.
func (u *Upgrade) Waves() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.waves
}

func nodeName(inv *inventory.Inventory, m inventory.Machine) string {
	return kubeadm.NodeOf(inv, m).Name
}

func (u *Upgrade) node(h *engine.Host) string { return nodeName(u.inv, h.Machine) }

// client is the API client plan made.
func (u *Upgrade) client() *Kube {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.kube
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
	ro := &engine.Rollout{
		Name: PhaseRollout, Title: "Upgrade the GPU nodes, a wave at a time",
		Next: u.next,
		Leave: func(h *engine.Host) string {
			u.mu.Lock()
			defer u.mu.Unlock()
			return u.left[h.Name()]
		},
	}
	ro.Phases = append(ro.Phases, &cordonPhase{u}, &drainPhase{u}, &stopPhase{u})
	ro.Phases = append(ro.Phases, u.nvidia...)
	ro.Phases = append(ro.Phases, u.verify)
	ro.Phases = append(ro.Phases, &gpusPhase{u}, &uncordonPhase{u})
	return []engine.Phase{&checkPhase{u}, &planPhase{u}, &snapshotPhase{u}, ro.Phase()}
}

// ---- upgrade/check: what each host needs, read by the NVIDIA layer

type checkPhase struct{ u *Upgrade }

func (*checkPhase) Name() string  { return PhaseCheck }
func (*checkPhase) Title() string { return "Check what each GPU host needs" }

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
	for _, ph := range p.u.nvidia {
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
		p.u.skips[h.Name()] = "the driver, CUDA and the container toolkit are as asked"
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
	c, err := p.u.api.Helm(ctx, h)
	if err != nil {
		return err
	}
	if c == nil {
		return fmt.Errorf("the cluster's API does not answer")
	}
	cfg := c.Config()
	counted := *cfg
	counted.QPS, counted.Burst = max(cfg.QPS, 50), max(cfg.Burst, 100)
	counted.Wrap(func(rt http.RoundTripper) http.RoundTripper { return countingTransport{rt, p.u.counter} })
	cs, err := kubernetes.NewForConfig(&counted)
	if err != nil {
		return err
	}
	k := &Kube{Client: cs, Config: &counted, Poll: p.u.o.Poll}
	list, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list the nodes: %w", err)
	}
	byName := map[string]*corev1.Node{}
	gpuNodes := 0
	for i := range list.Items {
		n := &list.Items[i]
		byName[n.Name] = n
		if IsGPUNode(n) {
			gpuNodes++
		}
	}
	u := p.u
	u.mu.Lock()
	defer u.mu.Unlock()
	u.kube = k
	u.gpuNodes = gpuNodes
	u.budget = u.o.Budget.Of(gpuNodes)
	for _, m := range u.inv.Machines {
		if n := byName[nodeName(u.inv, m)]; n != nil {
			u.nodes[m.Name] = n
			if CordonedByUs(n) {
				u.ours[m.Name] = true
			}
		}
	}
	h.Logf("%s: %d GPU nodes in the cluster, at most %d out of service at once (--max-unavailable %s)", PhasePlan, gpuNodes, u.budget, u.o.Budget)
	return nil
}

type countingTransport struct {
	rt http.RoundTripper
	c  *Counter
}

func (t countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	t.c.add()
	return t.rt.RoundTrip(r)
}
