package engine_test

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/engine/enginetest"
	"github.com/gpukit/gpukit/pkg/event"
	"github.com/gpukit/gpukit/pkg/ssh"
)

// waves of at most n hosts, stopping after a failure; hosts named in skip
// are left out.
func wavesOf(n int, skip ...string) func(context.Context, []*engine.Host, []engine.Outcome) engine.Wave {
	return func(_ context.Context, pending []*engine.Host, done []engine.Outcome) engine.Wave {
		var w engine.Wave
		for _, o := range done {
			if o.Err != nil {
				return engine.Wave{Stop: "stopped: " + o.Host.Name() + " failed"}
			}
		}
		for _, h := range pending {
			if slices.Contains(skip, h.Name()) {
				if w.Skip == nil {
					w.Skip = map[*engine.Host]string{}
				}
				w.Skip[h] = "left alone"
				continue
			}
			if len(w.Hosts) < n {
				w.Hosts = append(w.Hosts, h)
			}
		}
		return w
	}
}

func TestRolloutRunsWaveByWave(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var order []string
	var inFlight, most int
	track := func(name string, delta int) *funcPhase {
		return &funcPhase{name: name, run: func(_ context.Context, h *engine.Host) error {
			mu.Lock()
			defer mu.Unlock()
			inFlight += delta
			most = max(most, inFlight)
			order = append(order, name+":"+h.Name())
			return nil
		}}
	}
	after := probeAndApply("after/all")
	ro := &engine.Rollout{Name: "roll/out", Title: "Roll", Next: wavesOf(2, "gpu-003"),
		Phases: []engine.Phase{track("roll/take", 1), track("roll/give", -1)}}
	r := &engine.Runner{Phases: []engine.Phase{probeAndApply("before/all"), ro.Phase(), after}}
	fleet := &enginetest.Fleet{}
	sum, err, rec := run(t, r, fleet, 5)
	if err != nil {
		t.Fatal(err)
	}
	if most > 2 {
		t.Errorf("%d hosts were taken at once, the waves allow 2", most)
	}
	// Waves of two, in order; gpu-003 left out.
	waves := [][]string{{"gpu-001", "gpu-002"}, {"gpu-004", "gpu-005"}}
	var got [][]string
	for i := 0; i < len(order); i += 4 {
		var w []string
		for _, o := range order[i:min(i+4, len(order))] {
			if n, ok := strings.CutPrefix(o, "roll/take:"); ok {
				w = append(w, n)
			}
		}
		slices.Sort(w)
		got = append(got, w)
	}
	if !reflect.DeepEqual(got, waves) {
		t.Errorf("waves %v, want %v (order %v)", got, waves, order)
	}
	h3 := sum.Hosts[2]
	if h3.Host != "gpu-003" || h3.Status != engine.StatusSkipped || h3.Reason != "left alone" || h3.Phase != "roll/out" {
		t.Errorf("gpu-003: %+v", h3)
	}
	if n := len(fleet.Executor("gpu-003").Names()); n != 2 {
		t.Errorf("gpu-003 ran %d steps, want only before/all's 2: a host left out of the rollout takes no part after it", n)
	}
	if n := len(fleet.Executor("gpu-004").Names()); n != 4 {
		t.Errorf("gpu-004 ran %d steps, want 4", n)
	}
	first := rec.Events()[0]
	if want := []string{"connect", "before/all", "roll/out", "roll/take", "roll/give", "after/all"}; !reflect.DeepEqual(first.Phases, want) {
		t.Errorf("run_start phases %v, want %v", first.Phases, want)
	}
	var starts []string
	for _, e := range rec.OfType(event.PhaseStart) {
		starts = append(starts, fmt.Sprintf("%s/%d", e.Phase, e.Total))
	}
	if want := []string{"connect/5", "before/all/5", "roll/out/5", "roll/take/2", "roll/give/2", "roll/take/2", "roll/give/2", "after/all/4"}; !reflect.DeepEqual(starts, want) {
		t.Errorf("phase starts %v, want %v", starts, want)
	}
	for _, e := range rec.OfType(event.PhaseDone) {
		if e.Phase == "roll/out" && (e.Done != 4 || e.Skipped != 1 || e.Total != 5) {
			t.Errorf("rollout done: %+v", e)
		}
	}
}

func TestRolloutStopsAfterAFailure(t *testing.T) {
	t.Parallel()
	fleet := &enginetest.Fleet{Handler: func(_ context.Context, e *enginetest.Executor, cmd ssh.Command) (ssh.Result, error) {
		if e.Host == "gpu-002" && cmd.Name == "change" {
			return ssh.Result{ExitCode: 1, Stderr: []byte("not verified")}, nil
		}
		return ssh.Result{}, nil
	}}
	ro := &engine.Rollout{Name: "roll/out", Next: wavesOf(1), Phases: []engine.Phase{probeAndApply("roll/verify"), probeAndApply("roll/uncordon")}}
	r := &engine.Runner{Phases: []engine.Phase{ro.Phase()}}
	sum, err, _ := run(t, r, fleet, 4)
	if err == nil {
		t.Fatal("want the failed host's error")
	}
	want := map[string]engine.Status{"gpu-001": engine.StatusOK, "gpu-002": engine.StatusFailed, "gpu-003": engine.StatusSkipped, "gpu-004": engine.StatusSkipped}
	for _, h := range sum.Hosts {
		if h.Status != want[h.Host] {
			t.Errorf("%s: %s, want %s", h.Host, h.Status, want[h.Host])
		}
		if h.Status == engine.StatusSkipped && h.Reason != "stopped: gpu-002 failed" {
			t.Errorf("%s: reason %q", h.Host, h.Reason)
		}
	}
	if got := fleet.Executor("gpu-002").Names(); !reflect.DeepEqual(got, []string{"probe", "change"}) {
		t.Errorf("gpu-002 ran %v: a host that failed a phase of its wave takes no later phase (it stays cordoned)", got)
	}
	if n := len(fleet.Executor("gpu-003").Names()); n != 0 {
		t.Errorf("gpu-003 ran %d steps after the rollout stopped", n)
	}
}
