package nvidia

import (
	"context"
	"fmt"
	"time"

	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/facts"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/scripts"
	"github.com/gpukit/gpukit/pkg/ssh"
)

// Phase names, stable for --only-phases / --skip-phases, events and logs.
const (
	PhasePrepare          = "nvidia/prepare"
	PhaseDriver           = "nvidia/driver"
	PhaseFabricManager    = "nvidia/fabricmanager"
	PhasePersistenced     = "nvidia/persistenced"
	PhaseCUDA             = "nvidia/cuda"
	PhaseContainerToolkit = "nvidia/container-toolkit"
	PhaseReboot           = "nvidia/reboot"
	PhaseVerify           = "nvidia/verify"
)

// Options are the run's choices that are not in the inventory.
type Options struct {
	// MaxParallelReboots bounds the hosts rebooting at once; 0: the run's
	// concurrency.
	MaxParallelReboots int
	// RebootTimeout overrides spec.nvidia.rebootTimeout when not zero.
	RebootTimeout time.Duration
	// Facts gives a host's facts, probing it when no earlier phase did
	// (--only-phases): probe.Ensure, which the flow passes down, as the
	// probe sits a layer above this one. nil: the facts an earlier phase
	// gathered, or an error naming the host.
	Facts func(ctx context.Context, h *engine.Host) (*facts.Facts, error)
}

// Layer is the NVIDIA layer of one run. Its phases share what they learned
// about each host: the decision (Want) and the state, re-read after every
// change.
type Layer struct {
	inv  *inventory.Inventory
	opts Options

	hosts engine.PerHost[hostInfo]
}

// hostInfo is one host's share. Only the goroutine working on the host
// touches it (phases of a host run one after another).
type hostInfo struct {
	decided bool
	want    Want
	err     error
	state   *State // nil: not read yet, or stale after a change
}

// New returns the layer for inv.
func New(inv *inventory.Inventory, opts Options) *Layer {
	return &Layer{inv: inv, opts: opts}
}

// facts are h's facts (Options.Facts).
func (l *Layer) facts(ctx context.Context, h *engine.Host) (*facts.Facts, error) {
	if l.opts.Facts != nil {
		return l.opts.Facts(ctx, h)
	}
	if h.Facts == nil {
		return nil, fmt.Errorf("%s: its facts were not gathered (the preflight phase probes them)", h.Name())
	}
	return h.Facts, nil
}

// want decides once per host what it gets (probing it first when no earlier
// phase did).
func (l *Layer) want(ctx context.Context, h *engine.Host) (Want, error) {
	hi := l.hosts.Of(h.Name())
	if !hi.decided {
		f, err := l.facts(ctx, h)
		if err != nil {
			return Want{}, err
		}
		hi.want, hi.err = Decide(l.inv, h.Machine, f)
		hi.decided = true
	}
	return hi.want, hi.err
}

// state returns the host's NVIDIA state, read once and again after every
// change the layer made.
func (l *Layer) state(ctx context.Context, h *engine.Host) (*State, error) {
	hi := l.hosts.Of(h.Name())
	if hi.state != nil {
		return hi.state, nil
	}
	cmd, err := scripts.NVIDIAState(scripts.NVIDIAStateParams{GPUFields: facts.GPUQueryFields()})
	if err != nil {
		return nil, err
	}
	res, err := h.Run(ctx, "read the NVIDIA state", cmd)
	if err != nil {
		return nil, err
	}
	s, err := ParseState(res.Stdout)
	if err != nil {
		return nil, err
	}
	hi.state = s
	return s, nil
}

// changed marks the host's state stale after a write.
func (l *Layer) changed(h *engine.Host) { l.hosts.Of(h.Name()).state = nil }

// begin is the start of every phase's ShouldRun: the decision and the
// state, or why the host is skipped.
func (l *Layer) begin(ctx context.Context, h *engine.Host) (Want, *State, string, error) {
	w, err := l.want(ctx, h)
	if err != nil {
		return w, nil, "", err
	}
	if !w.GPU {
		return w, nil, "no NVIDIA GPU on this host", nil
	}
	s, err := l.state(ctx, h)
	return w, s, "", err
}

func (l *Layer) rebootTimeout() time.Duration {
	if l.opts.RebootTimeout > 0 {
		return l.opts.RebootTimeout
	}
	d, err := time.ParseDuration(l.inv.Cluster.Spec.NVIDIA.RebootTimeout)
	if err != nil || d <= 0 {
		d, _ = time.ParseDuration(inventory.DefaultRebootTimeout)
	}
	return d
}

// The layer's phases, in the order a command lists them (internal/flow).
func (l *Layer) Prepare() engine.Phase          { return &preparePhase{l} }
func (l *Layer) Driver() engine.Phase           { return &driverPhase{l} }
func (l *Layer) FabricManager() engine.Phase    { return &fabricManagerPhase{l} }
func (l *Layer) Persistenced() engine.Phase     { return &persistencedPhase{l} }
func (l *Layer) CUDA() engine.Phase             { return &cudaPhase{l} }
func (l *Layer) ContainerToolkit() engine.Phase { return &containerToolkitPhase{l} }
func (l *Layer) Reboot() engine.Phase           { return &rebootPhase{l} }
func (l *Layer) Verify() engine.Phase           { return &verifyPhase{l} }

// apply runs a write (or records it, in dry-run) and marks the state stale.
func (l *Layer) apply(ctx context.Context, h *engine.Host, step string, cmd ssh.Command, err error) error {
	if err != nil {
		return err
	}
	_, err = h.Apply(ctx, step, cmd)
	l.changed(h)
	return err
}

// describeVersion names the driver a host gets, for step names and logs.
func describeVersion(w Want) string {
	return w.Driver + " (" + w.Flavor + " modules, " + w.Source + ")"
}
