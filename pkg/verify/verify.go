// Package verify is `gpukit verify`: each GPU node's acceptance tests
// (NVIDIA DCGM's diagnostic, NCCL's all-reduce bandwidth across its GPUs)
// run on the host, judged by pkg/acceptance against the bill of materials'
// thresholds, and the nodes that fail named and, when asked, tainted. A
// test that cannot run is reported as not run, never as passed.
package verify

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpukit/gpukit/manifests"
	"github.com/gpukit/gpukit/pkg/acceptance"
	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/facts"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/kube"
	"github.com/gpukit/gpukit/pkg/scripts"
)

// The phases.
const (
	PhaseDiag    = "verify/dcgm"
	PhaseNCCL    = "verify/nccl"
	PhaseCluster = "verify/nccl-cluster"
	PhaseTaint   = "verify/taint"
)

// TaintKey marks a node that failed its acceptance tests (NoSchedule).
const TaintKey = "gpukit.dev/acceptance"

// Options are the run's choices.
type Options struct {
	// Level is DCGM's diagnostic level (1 about a minute, 2 a few, 3 about
	// half an hour); 0 runs none.
	Level int
	// NCCL runs the bandwidth tests.
	NCCL bool
	// MinNodeBusBW replaces the bill's floor for every node (GB/s; 0: the
	// bill's).
	MinNodeBusBW float64
	// DiagTimeout and NCCLTimeout bound each host's test.
	DiagTimeout, NCCLTimeout time.Duration
	// Facts gives a host's facts (the flow passes probe.Ensure).
	Facts func(ctx context.Context, h *engine.Host) (*facts.Facts, error)
	// Taint taints the failed nodes through API from the host Target picks
	// (Kubernetes; nil: no taint).
	Taint  kube.API
	Target func([]*engine.Host) []*engine.Host
}

// Test is one test's outcome on a node.
type Test struct {
	Status acceptance.Status `json:"status"`
	Detail []string          `json:"detail,omitempty"`
	// BusBW and Threshold are the bandwidth test's (GB/s).
	BusBW     float64 `json:"busBW,omitempty"`
	Threshold float64 `json:"threshold,omitempty"`
}

// Node is one GPU node's report.
type Node struct {
	Host string `json:"host"`
	GPU  string `json:"gpu,omitempty"`
	GPUs int    `json:"gpus"`
	DCGM Test   `json:"dcgm"`
	NCCL Test   `json:"nccl"`
	// Tainted: --taint-failed tainted its node.
	Tainted bool `json:"tainted,omitempty"`
}

// Failed says whether a test of the node failed.
func (n Node) Failed() bool {
	return n.DCGM.Status == acceptance.Failed || n.NCCL.Status == acceptance.Failed
}

// Verify is one run.
type Verify struct {
	inv *inventory.Inventory
	o   Options

	mu      sync.Mutex
	nodes   map[string]*Node
	cluster Test
}

// New is a run over inv's hosts.
func New(inv *inventory.Inventory, o Options) *Verify {
	if o.DiagTimeout <= 0 {
		o.DiagTimeout = map[int]time.Duration{1: 5 * time.Minute, 2: 20 * time.Minute}[o.Level]
		if o.DiagTimeout == 0 {
			o.DiagTimeout = 2 * time.Hour
		}
	}
	if o.NCCLTimeout <= 0 {
		o.NCCLTimeout = 15 * time.Minute
	}
	return &Verify{inv: inv, o: o, nodes: map[string]*Node{}, cluster: Test{Status: acceptance.NotRun}}
}

// Phases are the run's, in order.
func (v *Verify) Phases() []engine.Phase {
	ps := []engine.Phase{&diagPhase{v}, &ncclPhase{v}, &clusterPhase{v}}
	if v.o.Taint != nil {
		ps = append(ps, &taintPhase{v})
	}
	return ps
}

// Nodes are the reports, in inventory order.
func (v *Verify) Nodes() []Node {
	v.mu.Lock()
	defer v.mu.Unlock()
	var out []Node
	for _, m := range v.inv.Machines {
		if n := v.nodes[m.Name]; n != nil {
			c := *n
			for _, t := range []*Test{&c.DCGM, &c.NCCL} {
				if t.Status == acceptance.NotRun && len(t.Detail) == 0 {
					t.Detail = []string{"not reached: the host failed an earlier test or left the run"}
				}
			}
			out = append(out, c)
		}
	}
	return out
}

// Cluster is the test across nodes.
func (v *Verify) Cluster() Test {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.cluster
}

// node is h's report, made from its facts the first time: nil for a host
// without an NVIDIA GPU.
func (v *Verify) node(ctx context.Context, h *engine.Host) (*Node, error) {
	v.mu.Lock()
	n, seen := v.nodes[h.Name()]
	v.mu.Unlock()
	if seen {
		return n, nil
	}
	f, err := v.o.Facts(ctx, h)
	if err != nil {
		return nil, err
	}
	if len(f.GPUs) == 0 && len(f.PCIGPUs) == 0 {
		return nil, nil
	}
	n = &Node{Host: h.Name(), GPUs: len(f.GPUs), DCGM: Test{Status: acceptance.NotRun}, NCCL: Test{Status: acceptance.NotRun}}
	if len(f.GPUs) > 0 {
		n.GPU = f.GPUs[0].Name
	}
	v.mu.Lock()
	v.nodes[h.Name()] = n
	v.mu.Unlock()
	return n, nil
}

func (v *Verify) set(n *Node, f func(*Node)) {
	v.mu.Lock()
	defer v.mu.Unlock()
	f(n)
}

// skip is the common ShouldRun: hosts without GPUs, a test not asked for,
// a dry-run (which runs no test: it says what it would run); test is the
// node's record of it.
func (v *Verify) skip(ctx context.Context, h *engine.Host, asked bool, what string, test func(*Node) *Test) (bool, string, error) {
	n, err := v.node(ctx, h)
	why := ""
	switch {
	case err != nil:
		return false, "", err
	case n == nil:
		return false, "no NVIDIA GPU on this host", nil
	case !asked:
		why = what + " not asked for"
	case h.DryRun():
		why = "dry-run: " + what + " would run"
	default:
		return true, "", nil
	}
	v.set(n, func(n *Node) { *test(n) = Test{Status: acceptance.NotRun, Detail: []string{why}} })
	return false, why, nil
}

// ---- verify/dcgm

type diagPhase struct{ v *Verify }

func (*diagPhase) Name() string    { return PhaseDiag }
func (*diagPhase) HostLocal() bool { return true }
func (p *diagPhase) Title() string {
	return fmt.Sprintf("Run NVIDIA DCGM's diagnostic (level %d) on each GPU node", p.v.o.Level)
}

func (p *diagPhase) ShouldRun(ctx context.Context, h *engine.Host) (bool, string, error) {
	return p.v.skip(ctx, h, p.v.o.Level > 0, fmt.Sprintf("dcgmi diag -r %d", p.v.o.Level), func(n *Node) *Test { return &n.DCGM })
}

func (p *diagPhase) Run(ctx context.Context, h *engine.Host) error {
	n, err := p.v.node(ctx, h)
	if err != nil || n == nil {
		return err
	}
	cmd, err := scripts.GPUDiag(scripts.GPUDiagParams{Level: p.v.o.Level, TimeoutSeconds: int(p.v.o.DiagTimeout.Seconds())})
	if err != nil {
		return err
	}
	res, err := h.Run(ctx, "dcgm diagnostics", cmd, engine.Timeout(p.v.o.DiagTimeout+time.Minute))
	if err != nil {
		return err
	}
	out := string(res.Stdout)
	if why, ok := scripts.Said([]byte(out), scripts.NotRunPrefix); ok {
		p.v.set(n, func(n *Node) { n.DCGM = Test{Status: acceptance.NotRun, Detail: []string{why}} })
		h.Logf("%s: not run: %s", PhaseDiag, why)
		return nil
	}
	d, err := acceptance.ParseDCGMDiag(out)
	if err != nil {
		return err
	}
	st, detail := d.Verdict()
	p.v.set(n, func(n *Node) { n.DCGM = Test{Status: st, Detail: detail} })
	if st == acceptance.Failed {
		return fmt.Errorf("DCGM diagnostic level %d failed: %s", p.v.o.Level, strings.Join(detail, "; "))
	}
	h.Logf("%s: %s", PhaseDiag, st)
	return nil
}

// ---- verify/nccl

type ncclPhase struct{ v *Verify }

func (*ncclPhase) Name() string    { return PhaseNCCL }
func (*ncclPhase) HostLocal() bool { return true }
func (*ncclPhase) Title() string {
	return "Measure NCCL all-reduce bandwidth across each node's GPUs (nccl-tests)"
}

func (p *ncclPhase) ShouldRun(ctx context.Context, h *engine.Host) (bool, string, error) {
	return p.v.skip(ctx, h, p.v.o.NCCL, "all_reduce_perf", func(n *Node) *Test { return &n.NCCL })
}

// ncclPaths are where nccl-tests are found besides PATH: its build
// directory's usual places.
var ncclPaths = []string{"/usr/local/bin/all_reduce_perf", "/opt/nccl-tests/build/all_reduce_perf", "/usr/local/nccl-tests/build/all_reduce_perf"}

func (p *ncclPhase) Run(ctx context.Context, h *engine.Host) error {
	n, err := p.v.node(ctx, h)
	if err != nil || n == nil {
		return err
	}
	cmd, err := scripts.NCCLNode(scripts.NCCLNodeParams{Paths: ncclPaths, MinBytes: "8M", MaxBytes: "4G", TimeoutSeconds: int(p.v.o.NCCLTimeout.Seconds())})
	if err != nil {
		return err
	}
	res, err := h.Run(ctx, "nccl bandwidth", cmd, engine.Timeout(p.v.o.NCCLTimeout+time.Minute))
	if err != nil {
		return err
	}
	out := string(res.Stdout)
	if why, ok := scripts.Said([]byte(out), scripts.NotRunPrefix); ok {
		p.v.set(n, func(n *Node) { n.NCCL = Test{Status: acceptance.NotRun, Detail: []string{why}} })
		h.Logf("%s: not run: %s", PhaseNCCL, why)
		return nil
	}
	r, err := acceptance.ParseNCCL(out)
	if err != nil {
		return err
	}
	gpu, gpus := n.GPU, n.GPUs
	if len(r.Ranks) > 0 {
		gpu, gpus = r.Ranks[0].GPU, len(r.Ranks)
	}
	min := p.v.o.MinNodeBusBW
	if min == 0 {
		min = manifests.Bill().NCCLThreshold(gpu, gpus, "node")
	}
	st, why := r.Verdict(min)
	p.v.set(n, func(n *Node) { n.NCCL = Test{Status: st, Detail: []string{why}, BusBW: r.PeakBusBW(), Threshold: min} })
	if st == acceptance.Failed {
		return fmt.Errorf("NCCL all-reduce across %d GPUs: %s", gpus, why)
	}
	h.Logf("%s: %s", PhaseNCCL, why)
	return nil
}

// ---- verify/nccl-cluster

type clusterPhase struct{ v *Verify }

func (*clusterPhase) Name() string  { return PhaseCluster }
func (*clusterPhase) Title() string { return "Measure NCCL all-reduce bandwidth across the nodes" }

func (p *clusterPhase) Targets(hosts []*engine.Host) []*engine.Host {
	if len(hosts) == 0 {
		return nil
	}
	return hosts[:1]
}

func (p *clusterPhase) Run(ctx context.Context, h *engine.Host) error {
	gpuNodes := len(p.v.Nodes())
	why := "not built yet: a run across nodes needs an MPI launcher between them (mpirun over SSH, or the Kubeflow trainer's MPIJob)"
	switch {
	case !p.v.o.NCCL:
		why = "all_reduce_perf not asked for"
	case gpuNodes < 2:
		why = fmt.Sprintf("%d GPU node: nothing to measure between nodes", gpuNodes)
	}
	p.v.mu.Lock()
	p.v.cluster = Test{Status: acceptance.NotRun, Detail: []string{why}}
	p.v.mu.Unlock()
	h.Logf("%s: not run: %s", PhaseCluster, why)
	return nil
}

// ---- verify/taint

type taintPhase struct{ v *Verify }

func (*taintPhase) Name() string  { return PhaseTaint }
func (*taintPhase) Title() string { return "Taint the nodes that failed (" + TaintKey + ":NoSchedule)" }

func (p *taintPhase) Targets(hosts []*engine.Host) []*engine.Host { return p.v.o.Target(hosts) }

func (p *taintPhase) Run(ctx context.Context, h *engine.Host) error {
	var failed []string
	for _, n := range p.v.Nodes() {
		if n.Failed() {
			failed = append(failed, n.Host)
		}
	}
	if len(failed) == 0 {
		return nil
	}
	c, err := p.v.o.Taint.Client(ctx, h)
	if err != nil || c == nil {
		return err
	}
	taint := corev1.Taint{Key: TaintKey, Value: "failed", Effect: corev1.TaintEffectNoSchedule}
	for _, name := range failed {
		node := kube.NodeName(p.v.machine(name))
		err := h.WriteAPI(ctx, "taint "+node, "Node "+node+": taint "+kube.TaintString(taint), func(ctx context.Context) error {
			n, err := c.Clientset.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
			if err != nil {
				return err
			}
			for _, t := range n.Spec.Taints {
				if t.Key == taint.Key && t.Effect == taint.Effect {
					return nil
				}
			}
			n.Spec.Taints = append(n.Spec.Taints, taint)
			_, err = c.Clientset.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			return fmt.Errorf("taint %s: %w", node, err)
		}
		p.v.mu.Lock()
		if r := p.v.nodes[name]; r != nil {
			r.Tainted = true
		}
		p.v.mu.Unlock()
	}
	return nil
}

func (v *Verify) machine(name string) inventory.Machine {
	for _, m := range v.inv.Machines {
		if m.Name == name {
			return m
		}
	}
	return inventory.Machine{Name: name}
}
