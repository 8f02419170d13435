package engine_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/engine/enginetest"
	"github.com/gpukit/gpukit/pkg/ssh"
)

// A step that never ends (nvidia-smi on a wedged GPU) fails at its kind's
// deadline, named with the host and step; the other hosts finish; a step's
// own deadline wins over the run's.
func TestStepDeadlines(t *testing.T) {
	t.Parallel()
	hang := func(ctx context.Context, e *enginetest.Executor, cmd ssh.Command) (ssh.Result, error) {
		if e.Host == "gpu-002" || cmd.Name == "long write" {
			<-ctx.Done()
			return ssh.Result{}, ctx.Err()
		}
		return ssh.Result{}, nil
	}
	for _, tc := range []struct {
		name    string
		run     func(ctx context.Context, h *engine.Host) error
		wantErr string
	}{
		{"a read", func(ctx context.Context, h *engine.Host) error {
			_, err := h.Run(ctx, "read the GPUs", ssh.Command{Script: "nvidia-smi"})
			return err
		}, "read the GPUs: no end within 50ms, the deadline of a read (--read-timeout): stopped"},
		{"a write", func(ctx context.Context, h *engine.Host) error {
			_, err := h.Apply(ctx, "install the driver", ssh.Command{Script: "apt-get install"})
			return err
		}, "install the driver: no end within 80ms, the deadline of a write (--write-timeout): stopped"},
		{"a step's own", func(ctx context.Context, h *engine.Host) error {
			_, err := h.Run(ctx, "wait for the pods", ssh.Command{Script: "sleep"}, engine.Timeout(20*time.Millisecond))
			return err
		}, "wait for the pods: no end within 20ms, the deadline of a read (--read-timeout): stopped"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &engine.Runner{Phases: []engine.Phase{&funcPhase{name: "gpu/read", run: tc.run}},
				ReadTimeout: 50 * time.Millisecond, WriteTimeout: 80 * time.Millisecond}
			sum, _, _ := run(t, r, &enginetest.Fleet{Handler: hang}, 3)
			c := sum.HostCounts()
			failed := sum.Failed()
			if c.Failed != 1 || len(failed) != 1 || failed[0].Host != "gpu-002" || !strings.Contains(failed[0].Err.Error(), tc.wantErr) {
				t.Fatalf("%+v %v, want gpu-002 failed with %q", c, failed, tc.wantErr)
			}
			if !strings.Contains(failed[0].Err.Error(), "host gpu-002") {
				t.Errorf("the error does not name the host: %v", failed[0].Err)
			}
		})
	}
}
