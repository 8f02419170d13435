// Package probe gathers a host's facts (pkg/facts) over its connection, in
// one round trip: preflight's first phase, and any later phase that runs
// without it (--only-phases) or needs fresh facts after a change.
package probe

import (
	"context"

	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/facts"
	"github.com/gpukit/gpukit/pkg/scripts"
)

// Facts probes h, stores the result on it (h.Facts) and returns it. The
// probe only reads, so it runs in dry-run too.
func Facts(ctx context.Context, h *engine.Host) (*facts.Facts, error) {
	cmd, err := scripts.Probe(scripts.ProbeParams{GPUFields: facts.GPUQueryFields()})
	if err != nil {
		return nil, err
	}
	res, err := h.Run(ctx, "probe", cmd, engine.DataOutput())
	if err != nil {
		return nil, err
	}
	f, err := facts.Parse(res.Stdout)
	if err != nil {
		return nil, err
	}
	h.Facts = f
	return f, nil
}

// Ensure returns h's facts, probing it when no earlier phase did.
func Ensure(ctx context.Context, h *engine.Host) (*facts.Facts, error) {
	if h.Facts != nil {
		return h.Facts, nil
	}
	return Facts(ctx, h)
}
