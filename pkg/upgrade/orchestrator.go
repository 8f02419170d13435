package upgrade

import (
	"context"
	"io"
	"time"

	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/facts"
	"github.com/gpukit/gpukit/pkg/inventory"
)

// Orchestrator is what the rollout works through to take a node out of
// service and give it back: Kubernetes' API (Kube) or a swarm's first
// manager (Swarm). The wave planner and the phases see only this, so the
// budget, the training rules, the state and --resume are the same for
// both.
type Orchestrator interface {
	// NodeName is the node m runs as.
	NodeName(m inventory.Machine) string
	// Nodes lists the cluster's nodes as they are now.
	Nodes(ctx context.Context) ([]Node, error)
	// Uncordon puts the node back in service and drops gpukit's mark.
	Uncordon(ctx context.Context, node string) error
	// Training are the node's workloads that look like training.
	Training(ctx context.Context, node string) ([]Workload, error)
	// Checkpoint runs w's hook; on is w's node's host. What the hook
	// printed comes back for the log.
	Checkpoint(ctx context.Context, on *engine.Host, w Workload) (string, error)
	// Drain moves the node's work away (training refused unless o.Force)
	// and returns when it has left; an orchestrator that is not a cordoner
	// takes the node out of service and marks it here.
	Drain(ctx context.Context, node string, o DrainOptions, log io.Writer) error
	// Evictable names what Drain would move: a dry-run's plan.
	Evictable(ctx context.Context, node string, o DrainOptions) ([]string, error)
	// WaitGPUs waits until the node is up and advertises want GPUs to the
	// scheduler.
	WaitGPUs(ctx context.Context, node string, want int64, timeout time.Duration) error
	// Says what op does to the node, for the log and a dry-run's plan.
	Says(op Op, node string) string
	// Relabel says how the node's labels change to follow the host's
	// verified GPUs (none: nothing to change) and returns that change.
	Relabel(ctx context.Context, node string, m inventory.Machine, f *facts.Facts) (changes []string, apply func(context.Context) error, err error)
}

// Op is a change Orchestrator.Says describes.
type Op int

// The changes to a node.
const (
	OpCordon Op = iota
	OpDrain
	OpUncordon
)

// cordoner is an orchestrator that can stop new work from landing on a node
// (and mark it as taken out by gpukit's upgrade) while its work stays: a
// node found training is given back as it was. A swarm cannot: a paused
// node made active again loses the tasks holding its GPUs (swarmkit's
// constraint enforcer rejects every task with a named generic resource
// when an active node is updated), so its drain does both.
type cordoner interface {
	Cordon(ctx context.Context, node string, now time.Time) error
}

// uncordonCaveater says what giving a node back does besides: a swarm
// re-runs the finished GPU jobs whose tasks it still books on the node.
type uncordonCaveater interface {
	UncordonCaveats(ctx context.Context, node string) ([]string, error)
}

// devicePluginRestarter is an orchestrator whose GPUs are advertised by a
// plugin that must be restarted on the new driver (Kubernetes' device
// plugin; a swarm's engine reads its GPUs at start, which the reboot or
// swarm/runtime's restart gives it).
type devicePluginRestarter interface {
	RestartDevicePlugin(ctx context.Context, node string) (int, error)
}

// kubeletWaiter is an orchestrator whose nodes run a kubelet (Kubernetes):
// WaitKubelet waits until the node's kubelet reports version (vX.Y.Z).
type kubeletWaiter interface {
	WaitKubelet(ctx context.Context, node, version string, timeout time.Duration) error
}

// Node is a node as the rollout sees it.
type Node struct {
	Name string
	// GPU: the node has NVIDIA GPUs (advertised, or labelled so).
	GPU bool
	// GPUs is how many it advertises to the scheduler now.
	GPUs int64
	// Unschedulable: no new work lands on it (cordoned; a swarm node paused
	// or drained).
	Unschedulable bool
	// Ours: taken out of service by a gpukit upgrade.
	Ours   bool
	Labels map[string]string
}

// Workload is a training workload on a node: a pod, or a swarm task.
type Workload struct {
	// Name is namespace/pod, or the swarm task's service.slot.
	Name string
	// Why it looks like training.
	Why string
	// Hook is its checkpoint request (nil: none); HookErr a malformed one,
	// which stops the node: it is the owner's request, and doing something
	// else would lose their checkpoint.
	Hook    *Hook
	HookErr error
	// ref is the orchestrator's own handle (the pod; the task's container).
	ref any
}

// Connect reaches the cluster's orchestrator from h (the first control
// plane or manager); count is called once per request it makes.
type Connect func(ctx context.Context, h *engine.Host, count func()) (Orchestrator, error)
