package engine

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"time"

	"github.com/gpukit/gpukit/pkg/event"
	"github.com/gpukit/gpukit/pkg/ssh"
)

// DialFunc opens a TCP connection as seen from a host. An alias, so that a
// Host is a kube.Host without the API's package knowing this one.
type DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error)

// tunneler is an Executor that can open connections from its host (the SSH
// client's direct-tcpip channels).
type tunneler interface {
	DialContext(ctx context.Context, network, addr string) (net.Conn, error)
}

// Dialer opens connections from the host through its connection, for a
// client of an API that listens there (the cluster's API server on a
// control plane): it reaches what the host reaches, through bastions too.
// nil when the host's executor cannot (a recording one). Writes over such
// connections go through WriteAPI.
//
// The connection is looked up at each dial, so that a client made before
// the host rebooted (Reconnect) dials through the new one, and one that
// ended since (a bastion restarted) is dialled again first.
func (h *Host) Dialer() DialFunc {
	if _, ok := h.executor().(tunneler); !ok {
		return nil
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		t, ok := h.revive(ctx, "dial "+addr).(tunneler)
		if !ok {
			return nil, fmt.Errorf("dial %s through %s: not connected", addr, h.Name())
		}
		return t.DialContext(ctx, network, addr)
	}
}

// RemoteFunc runs a command on a host through its connection.
type RemoteFunc func(ctx context.Context, cmd ssh.Command) (ssh.Result, error)

// Remote runs commands on the host's connection for other hosts' phases
// and for a rollout's planner between waves, as Dialer reaches an API
// there: a swarm manager's docker, which only a manager answers. It leaves
// out the host's events, log and dry-run gate, so only reads go through it
// directly; the caller logs to its own host, and its writes go through its
// own WriteAPI. The connection is looked up at each call (see Dialer).
func (h *Host) Remote() RemoteFunc {
	return func(ctx context.Context, cmd ssh.Command) (ssh.Result, error) {
		c := h.revive(ctx, cmp.Or(cmd.Name, "command"))
		if c == nil {
			return ssh.Result{}, fmt.Errorf("%s: %s is not connected", cmp.Or(cmd.Name, "command"), h.Name())
		}
		return c.Run(ctx, cmd)
	}
}

// WriteAPI is a write through an API rather than a script on the host (a
// Kubernetes object changed): the same gate as Apply. In dry-run it records
// a Planned event with what instead of calling write.
func (h *Host) WriteAPI(ctx context.Context, step, what string, write func(ctx context.Context) error) error {
	h.changed = true
	if h.DryRun() {
		h.emit(event.Event{Type: event.Planned, Step: step, Message: what})
		return nil
	}
	h.emit(event.Event{Type: event.StepStart, Step: step})
	h.Logf("$ api %s: %s", step, what)
	start := time.Now()
	return h.finish(ctx, step, start, write(ctx))
}
