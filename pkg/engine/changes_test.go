package engine_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/engine/enginetest"
	"github.com/gpukit/gpukit/pkg/event"
	"github.com/gpukit/gpukit/pkg/ssh"
)

// A host is changed when a write ran on it, unchanged when only reads did
// (a converged host), failed when it failed; the counts are in the summary
// and in the last event. In dry-run, "changed" means a write would run.
func TestChangedUnchangedFailed(t *testing.T) {
	t.Parallel()
	p := &funcPhase{name: "converge", run: func(ctx context.Context, h *engine.Host) error {
		res, err := h.Run(ctx, "probe", ssh.Command{Script: "probe"})
		if err != nil {
			return err
		}
		switch strings.TrimSpace(string(res.Stdout)) {
		case "converged":
			return nil
		}
		_, err = h.Apply(ctx, "install", ssh.Command{Script: "install"})
		return err
	}}
	fleet := func() *enginetest.Fleet {
		return &enginetest.Fleet{Handler: func(_ context.Context, e *enginetest.Executor, cmd ssh.Command) (ssh.Result, error) {
			if cmd.Script != "probe" {
				if e.Host == "gpu-002" {
					return ssh.Result{ExitCode: 100}, &ssh.ExitError{Command: "install", Code: 100}
				}
				return ssh.Result{}, nil
			}
			switch e.Host {
			case "gpu-001":
				return ssh.Result{Stdout: []byte("converged\n")}, nil
			case "gpu-002":
				return ssh.Result{Stdout: []byte("broken\n")}, nil
			}
			return ssh.Result{Stdout: []byte("new\n")}, nil
		}}
	}
	for _, dry := range []bool{false, true} {
		f := fleet()
		sum, _, rec := run(t, &engine.Runner{Phases: []engine.Phase{p}, DryRun: dry}, f, 4)
		want := event.HostCounts{Changed: 2, Unchanged: 1, Failed: 1}
		if dry {
			want = event.HostCounts{Changed: 3, Unchanged: 1} // the broken host's write is only planned
		}
		if got := sum.HostCounts(); got != want {
			t.Errorf("dry-run %v: counts %+v, want %+v", dry, got, want)
		}
		last := rec.Events()[len(rec.Events())-1]
		if last.Type != event.RunDone || last.Hosts == nil || *last.Hosts != want {
			t.Errorf("dry-run %v: last event %+v", dry, last)
		}
		if h, _ := sum.Host("gpu-001"); h.Changed {
			t.Error("a converged host is reported changed")
		}
		if dry {
			for _, e := range f.Executors() {
				for _, n := range e.Names() {
					if n == "install" {
						t.Errorf("dry-run ran a write on %s", e.Host)
					}
				}
			}
		}
	}
}

// MaxParallel bounds a phase below the run's concurrency: at most so many
// hosts rebooting at once. Deciding is not bounded: hosts that need no
// reboot do not wait for those that do.
func TestPhaseMaxParallel(t *testing.T) {
	t.Parallel()
	fleet := &enginetest.Fleet{Handler: func(ctx context.Context, _ *enginetest.Executor, _ ssh.Command) (ssh.Result, error) {
		time.Sleep(5 * time.Millisecond)
		return ssh.Result{}, nil
	}}
	var deciding, changing gauge
	p := &limitedPhase{funcPhase: funcPhase{name: "reboot",
		shouldRun: func(ctx context.Context, h *engine.Host) (bool, string, error) {
			defer deciding.enter()()
			_, err := h.Run(ctx, "probe", ssh.Command{Script: "echo probe"})
			return !strings.HasSuffix(h.Name(), "5"), "", err // host-05 needs nothing
		},
		run: func(ctx context.Context, h *engine.Host) error {
			defer changing.enter()()
			_, err := h.Apply(ctx, "change", ssh.Command{Script: "echo change"})
			return err
		}}, max: 2}
	if _, err, _ := run(t, &engine.Runner{Phases: []engine.Phase{p}, Concurrency: 8}, fleet, 10); err != nil {
		t.Fatal(err)
	}
	if m := changing.max.Load(); m > 2 || m < 1 {
		t.Errorf("%d hosts changed at once, want at most 2", m)
	}
	if m := deciding.max.Load(); m <= 2 {
		t.Errorf("%d hosts decided at once: deciding is bounded by the phase's limit, want up to the run's 8", m)
	}
}

// gauge measures calls in flight.
type gauge struct{ now, max atomic.Int32 }

func (g *gauge) enter() (leave func()) {
	n := g.now.Add(1)
	for m := g.max.Load(); n > m && !g.max.CompareAndSwap(m, n); m = g.max.Load() {
	}
	return func() { g.now.Add(-1) }
}

type limitedPhase struct {
	funcPhase
	max int
}

func (p *limitedPhase) MaxParallel() int { return p.max }

// Reconnect dials again until the host is back as expected: a host that
// refuses connections while it reboots, then answers with its old boot id
// (not down yet), then with a new one.
func TestReconnect(t *testing.T) {
	t.Parallel()
	var dials atomic.Int32
	bootID := "boot-1"
	fleet := &enginetest.Fleet{
		BeforeDial: func(context.Context, string) error {
			switch dials.Add(1) {
			case 1: // the run's own connect
				return nil
			case 2, 3:
				return errors.New("connection refused")
			case 4:
				return nil // up, but still the old boot
			}
			bootID = "boot-2"
			return nil
		},
		Handler: func(_ context.Context, _ *enginetest.Executor, cmd ssh.Command) (ssh.Result, error) {
			return ssh.Result{Stdout: []byte(bootID + "\n")}, nil
		},
	}
	p := &funcPhase{name: "reboot", run: func(ctx context.Context, h *engine.Host) error {
		return h.Reconnect(ctx, "wait for the host", time.Minute, func(ctx context.Context) (bool, error) {
			res, err := h.Run(ctx, "boot id", ssh.Command{Script: "cat /proc/sys/kernel/random/boot_id"})
			return err == nil && strings.TrimSpace(string(res.Stdout)) == "boot-2", err
		})
	}}
	const interval = 50 * time.Millisecond
	start := time.Now()
	sum, err, _ := run(t, &engine.Runner{Phases: []engine.Phase{p, probeAndApply("after")}, ReconnectInterval: interval}, fleet, 1)
	if err != nil {
		t.Fatalf("%v %+v", err, sum.Hosts)
	}
	if dials.Load() != 5 {
		t.Errorf("%d dials, want 5", dials.Load())
	}
	// The phase after the reboot uses the new connection, and it is closed at the end.
	e := fleet.Executor("gpu-001")
	if got := e.Names(); len(got) != 3 || got[1] != "probe" {
		t.Errorf("new connection ran %v", got)
	}
	if e.Closes() == 0 {
		t.Error("the new connection was not closed at the end of the run")
	}
	if took := time.Since(start); took < 3*interval {
		t.Errorf("reconnected in %s: attempts are %s apart", took, interval)
	}
}

// A host that does not come back fails within the timeout, named, with the
// last reason; in dry-run nothing is waited for.
func TestReconnectTimeout(t *testing.T) {
	t.Parallel()
	var dials atomic.Int32
	fleet := &enginetest.Fleet{BeforeDial: func(context.Context, string) error {
		if dials.Add(1) > 1 {
			return errors.New("dial tcp 10.0.0.1:22: connect: no route to host")
		}
		return nil
	}}
	p := &funcPhase{name: "reboot", run: func(ctx context.Context, h *engine.Host) error {
		return h.Reconnect(ctx, "wait for the host", 3*time.Second, nil)
	}}
	start := time.Now()
	sum, _, _ := run(t, &engine.Runner{Phases: []engine.Phase{p}, ReconnectInterval: 100 * time.Millisecond}, fleet, 1)
	h := sum.Hosts[0]
	if h.Status != engine.StatusFailed || !strings.Contains(h.Err.Error(), "gpu-001 did not come back within 3s: dial tcp 10.0.0.1:22: connect: no route to host") {
		t.Errorf("%s %v", h.Status, h.Err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("timeout of 3s took %s", took)
	}
	dials.Store(0)
	sum, err, rec := run(t, &engine.Runner{Phases: []engine.Phase{p}, DryRun: true}, fleet, 1)
	if err != nil || len(rec.OfType(event.Planned)) != 1 || sum.Hosts[0].Changed {
		t.Errorf("dry-run: %v, planned %v", err, rec.OfType(event.Planned))
	}
}

// The timeout holds during an attempt too: a host that accepts the
// connection but never answers the readiness check is failed on time.
func TestReconnectTimeoutDuringAttempt(t *testing.T) {
	t.Parallel()
	p := &funcPhase{name: "reboot", run: func(ctx context.Context, h *engine.Host) error {
		return h.Reconnect(ctx, "wait for the host", 300*time.Millisecond, func(ctx context.Context) (bool, error) {
			<-ctx.Done() // a boot that never finishes
			return false, ctx.Err()
		})
	}}
	start := time.Now()
	sum, _, _ := run(t, &engine.Runner{Phases: []engine.Phase{p}}, &enginetest.Fleet{}, 1)
	h := sum.Hosts[0]
	if h.Status != engine.StatusFailed || !strings.Contains(h.Err.Error(), "gpu-001 did not come back within 300ms") {
		t.Errorf("%s %v", h.Status, h.Err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("a timeout of 300ms took %s", took)
	}
}

// A connection that ended between two steps (its bastion restarted under
// it) is dialled again before the next step, which runs on the new one; a
// step on a connection lost while it ran still fails (TestLabFaults: the
// SSH connection cut during a driver's build).
func TestStepRedialsALostConnection(t *testing.T) {
	t.Parallel()
	var dials atomic.Int32
	fleet := &enginetest.Fleet{BeforeDial: func(context.Context, string) error { dials.Add(1); return nil }}
	var first *enginetest.Executor
	p := &funcPhase{name: "steps", run: func(ctx context.Context, h *engine.Host) error {
		if _, err := h.Run(ctx, "before", ssh.Command{Script: "true"}); err != nil {
			return err
		}
		first = fleet.Executor(h.Name())
		first.Lose()
		_, err := h.Apply(ctx, "after", ssh.Command{Script: "true"})
		return err
	}}
	sum, err, _ := run(t, &engine.Runner{Phases: []engine.Phase{p}}, fleet, 1)
	if err != nil || sum.Hosts[0].Status == engine.StatusFailed {
		t.Fatalf("%v %+v", err, sum.Hosts)
	}
	if dials.Load() != 2 {
		t.Errorf("%d dials, want 2", dials.Load())
	}
	if second := fleet.Executor("gpu-001"); second == first || len(second.Names()) != 1 || second.Names()[0] != "after" || first.Closes() == 0 {
		t.Errorf("the step after the loss ran on %v (the lost connection closed %d times)", second.Names(), first.Closes())
	}
}

// Another host's phase reaches an API or a manager's docker through this
// host's connection (Remote, Dialer): a connection that ended is dialled
// again once, however many callers find it dead at the same time.
func TestRemoteRedialsALostConnectionOnce(t *testing.T) {
	t.Parallel()
	var dials atomic.Int32
	fleet := &enginetest.Fleet{BeforeDial: func(context.Context, string) error { dials.Add(1); return nil }}
	var first *enginetest.Executor
	p := &funcPhase{name: "steps", run: func(ctx context.Context, h *engine.Host) error {
		if _, err := h.Run(ctx, "before", ssh.Command{Script: "true"}); err != nil {
			return err
		}
		first = fleet.Executor(h.Name())
		first.Lose()
		remote := h.Remote()
		errs := make(chan error, 8)
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				_, err := remote(ctx, ssh.Command{Name: "docker node ls", Script: "true"})
				errs <- err
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				return err
			}
		}
		return nil
	}}
	sum, err, _ := run(t, &engine.Runner{Phases: []engine.Phase{p}}, fleet, 1)
	if err != nil || sum.Hosts[0].Status == engine.StatusFailed {
		t.Fatalf("%v %+v", err, sum.Hosts)
	}
	if dials.Load() != 2 {
		t.Errorf("%d dials, want 2 (the first, and one after the loss)", dials.Load())
	}
	if second := fleet.Executor("gpu-001"); second == first || len(second.Names()) != 8 || first.Closes() == 0 {
		t.Errorf("the remote commands after the loss ran on the new connection %d times, want 8 (the lost one closed %d times)", len(second.Names()), first.Closes())
	}
}
