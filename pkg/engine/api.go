package engine

import (
	"context"
	"net"
	"time"

	"github.com/gpukit/gpukit/pkg/event"
)

// DialFunc opens a TCP connection as seen from a host.
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

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
func (h *Host) Dialer() DialFunc {
	t, ok := h.conn.(tunneler)
	if !ok {
		return nil
	}
	return t.DialContext
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
