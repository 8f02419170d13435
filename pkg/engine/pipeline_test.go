package engine_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/engine/enginetest"
	"github.com/gpukit/gpukit/pkg/event"
)

// localPhase is a host-local phase (engine.HostLocal): no Targets, no
// Prepare, so consecutive ones run as a pipeline.
type localPhase struct {
	name    string
	run     func(ctx context.Context, h *engine.Host) error
	stopRun bool
}

func (p *localPhase) Name() string           { return p.name }
func (p *localPhase) Title() string          { return "Title of " + p.name }
func (p *localPhase) HostLocal() bool        { return true }
func (p *localPhase) StopRunOnFailure() bool { return p.stopRun }
func (p *localPhase) Run(ctx context.Context, h *engine.Host) error {
	if p.run == nil {
		return nil
	}
	return p.run(ctx, h)
}

// localPreparer says it is host-local but compares hosts first: it must
// stay a barrier.
type localPreparer struct {
	localPhase
	prepare func(all []*engine.Host) error
}

func (p *localPreparer) Prepare(_ context.Context, all, _ []*engine.Host) error {
	return p.prepare(all)
}

// checkBrackets checks what every display relies on, pipelined or not: a
// phase opens before any of its host events and closes after all of them,
// and phases close in the run's order.
func checkBrackets(t *testing.T, rec *enginetest.Recorder) {
	t.Helper()
	evs := rec.Events()
	opened, closed := map[string]int{}, map[string]int{}
	var closing []string
	for i, e := range evs {
		switch e.Type {
		case event.PhaseStart:
			opened[e.Phase] = i
		case event.PhaseDone:
			closed[e.Phase] = i
			closing = append(closing, e.Phase)
		}
	}
	for i, e := range evs {
		if e.Host == "" || e.Phase == "" {
			continue
		}
		if o, ok := opened[e.Phase]; !ok || o > i {
			t.Errorf("event %d (%s %s %s) before its phase opened", i, e.Type, e.Host, e.Phase)
		}
		if c, ok := closed[e.Phase]; !ok || c < i {
			t.Errorf("event %d (%s %s %s) after its phase closed", i, e.Type, e.Host, e.Phase)
		}
	}
	order := rec.OfType(event.RunStart)[0].Phases
	if !slices.IsSortedFunc(closing, func(a, b string) int { return slices.Index(order, a) - slices.Index(order, b) }) {
		t.Errorf("phases closed in the order %v, want the run's %v", closing, order)
	}
}

// index is the position of the first event matching typ, phase and host
// ("" matches any), or -1.
func index(rec *enginetest.Recorder, typ event.Type, phase, host string) int {
	for i, e := range rec.Events() {
		if e.Type == typ && (phase == "" || e.Phase == phase) && (host == "" || e.Host == host) {
			return i
		}
	}
	return -1
}

func TestPipelineDoesNotWaitForTheSlowestHost(t *testing.T) {
	t.Parallel()
	// gpu-001 cannot finish connecting, nor a/one, until gpu-002 finished
	// a/two: behind a barrier at either phase this would time out.
	passed := make(chan struct{})
	wait := func(ctx context.Context, what string) error {
		select {
		case <-passed:
			return nil
		case <-time.After(10 * time.Second):
			return fmt.Errorf("%s: gpu-002 never got past a/two", what)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	fleet := &enginetest.Fleet{BeforeDial: func(ctx context.Context, host string) error {
		if host == "gpu-001" {
			return wait(ctx, "connect")
		}
		return nil
	}}
	one := &localPhase{name: "a/one", run: func(ctx context.Context, h *engine.Host) error {
		if h.Name() == "gpu-001" {
			return wait(ctx, "a/one")
		}
		return nil
	}}
	two := &localPhase{name: "a/two", run: func(_ context.Context, h *engine.Host) error {
		if h.Name() == "gpu-002" {
			close(passed)
		}
		return nil
	}}
	r := &engine.Runner{Name: "gpukit test", Phases: []engine.Phase{one, two}}
	sum, err, rec := run(t, r, fleet, 3)
	if err != nil {
		t.Fatalf("Run: %v (%+v)", err, sum)
	}
	checkBrackets(t, rec)
	for _, e := range rec.OfType(event.PhaseDone) {
		if e.Done != 3 || e.Total != 3 {
			t.Errorf("phase done %s: %d of %d, want 3 of 3", e.Phase, e.Done, e.Total)
		}
	}
	if a, b := index(rec, event.HostDone, "a/two", "gpu-002"), index(rec, event.HostDone, "connect", "gpu-001"); a > b {
		t.Errorf("gpu-002 finished a/two (event %d) after gpu-001 connected (event %d)", a, b)
	}
}

func TestPipelineFailedHostStops(t *testing.T) {
	t.Parallel()
	var twos atomic.Int32
	for _, stop := range []bool{false, true} {
		t.Run(fmt.Sprintf("stopRun=%v", stop), func(t *testing.T) {
			t.Parallel()
			one := &localPhase{name: "a/one", stopRun: stop, run: func(_ context.Context, h *engine.Host) error {
				if h.Name() == "gpu-002" {
					return errors.New("boom")
				}
				return nil
			}}
			two := &localPhase{name: "a/two", run: func(_ context.Context, h *engine.Host) error {
				if h.Name() == "gpu-002" {
					twos.Add(1)
				}
				return nil
			}}
			r := &engine.Runner{Name: "gpukit test", Phases: []engine.Phase{one, two}}
			sum, err, rec := run(t, r, &enginetest.Fleet{}, 3)
			if !errors.Is(err, engine.ErrSomeHostsFailed) {
				t.Fatalf("Run: %v, want some hosts failed", err)
			}
			checkBrackets(t, rec)
			byHost := map[string]engine.HostResult{}
			for _, h := range sum.Hosts {
				byHost[h.Host] = h
			}
			if h := byHost["gpu-002"]; h.Status != engine.StatusFailed || h.Phase != "a/one" {
				t.Errorf("gpu-002: %s in %s, want failed in a/one", h.Status, h.Phase)
			}
			twoDone := rec.OfType(event.PhaseDone)
			if stop { // a run stopper closes the pipeline: a/two starts nowhere
				if index(rec, event.PhaseStart, "a/two", "") >= 0 {
					t.Errorf("a/two started after a/one, a run stopper, failed")
				}
				if h := byHost["gpu-001"]; h.Status != engine.StatusSkipped || h.Phase != "a/two" {
					t.Errorf("gpu-001: %s in %s, want skipped at a/two", h.Status, h.Phase)
				}
				return
			}
			if e := twoDone[len(twoDone)-1]; e.Phase != "a/two" || e.Done != 2 || e.Total != 2 {
				t.Errorf("a/two done: %+v, want 2 of 2 (gpu-002 failed before it)", e)
			}
		})
	}
	t.Cleanup(func() {
		if n := twos.Load(); n != 0 {
			t.Errorf("gpu-002 ran a/two %d times after failing a/one", n)
		}
	})
}

func TestPipelineStopsAtAPreparer(t *testing.T) {
	t.Parallel()
	var ones atomic.Int32
	one := &localPhase{name: "a/one", run: func(context.Context, *engine.Host) error {
		time.Sleep(10 * time.Millisecond)
		ones.Add(1)
		return nil
	}}
	cmp := &localPreparer{localPhase: localPhase{name: "a/compare"}, prepare: func(all []*engine.Host) error {
		if n := ones.Load(); n != int32(len(all)) {
			return fmt.Errorf("prepared after %d of %d hosts did a/one", n, len(all))
		}
		return nil
	}}
	r := &engine.Runner{Name: "gpukit test", Phases: []engine.Phase{one, cmp, &localPhase{name: "a/three"}}}
	sum, err, rec := run(t, r, &enginetest.Fleet{}, 5)
	if err != nil {
		t.Fatalf("Run: %v (%+v)", err, sum)
	}
	checkBrackets(t, rec)
	if a, b := index(rec, event.PhaseDone, "a/one", ""), index(rec, event.PhaseStart, "a/compare", ""); a > b {
		t.Errorf("a/compare opened (event %d) before a/one closed (event %d)", b, a)
	}
}

func TestPipelineCancelled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var started atomic.Int32
	one := &localPhase{name: "a/one", run: func(ctx context.Context, h *engine.Host) error {
		if started.Add(1) == 2 {
			cancel()
		}
		<-ctx.Done()
		return ctx.Err()
	}}
	rec := &enginetest.Recorder{}
	r := &engine.Runner{Name: "gpukit test", Concurrency: 2, Sink: rec,
		Phases: []engine.Phase{one, &localPhase{name: "a/two"}}}
	sum, err := r.Run(ctx, enginetest.Hosts(6), (&enginetest.Fleet{}).Dial)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run: %v, want cancelled", err)
	}
	checkBrackets(t, rec)
	if ok, failed, skipped := sum.Counts(); ok != 0 || failed != 0 || skipped != 6 {
		t.Errorf("counts %d ok, %d failed, %d skipped; want every host skipped as cancelled", ok, failed, skipped)
	}
	for _, h := range sum.Hosts {
		if h.Reason != "cancelled" {
			t.Errorf("%s: %s at %s (%s), want cancelled", h.Host, h.Status, h.Phase, h.Reason)
		}
	}
	if rs := rec.OfType(event.RunDone); len(rs) != 1 || rs[0].Status != event.StatusCancelled {
		t.Errorf("run done: %+v", rs)
	}
}
