package engine_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/engine/enginetest"
	"github.com/gpukit/gpukit/pkg/event"
	"github.com/gpukit/gpukit/pkg/facts"
	"github.com/gpukit/gpukit/pkg/ssh"
)

func names(hs []*engine.Host) []string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = h.Name()
	}
	return out
}

// Prepare runs once, after the earlier phases and before any Run of its
// phase, with every healthy host and the phase's targets; what it learns on
// one host (a join token on the first) reaches Run on the others.
func TestPrepareRunsOnceBeforeTheFanOut(t *testing.T) {
	t.Parallel()
	fleet := &enginetest.Fleet{
		DialErr: map[string]error{"gpu-004": errors.New("down")},
		Handler: byScript(map[string]ssh.Result{"create token": {Stdout: []byte("tok-123\n")}}),
	}
	var calls atomic.Int32
	var token string
	join := &preparePhase{
		funcPhase: funcPhase{
			name:    "join",
			targets: func(hs []*engine.Host) []*engine.Host { return hs[1:] },
			run: func(ctx context.Context, h *engine.Host) error {
				if token != "tok-123" {
					return errors.New("no token")
				}
				_, err := h.Apply(ctx, "join", ssh.Command{Script: "join", Args: []string{token}})
				return err
			},
		},
		prepare: func(ctx context.Context, all, targets []*engine.Host) error {
			calls.Add(1)
			if got := names(all); !reflect.DeepEqual(got, []string{"gpu-001", "gpu-002", "gpu-003"}) {
				t.Errorf("all = %v", got)
			}
			if got := names(targets); !reflect.DeepEqual(got, []string{"gpu-002", "gpu-003"}) {
				t.Errorf("targets = %v", got)
			}
			res, err := all[0].Run(ctx, "token", ssh.Command{Script: "create token"}, engine.SecretOutput())
			token = strings.TrimSpace(string(res.Stdout))
			all[0].AddSecret(token)
			return err
		},
	}
	sum, err, rec := run(t, &engine.Runner{Phases: []engine.Phase{join}}, fleet, 4)
	if calls.Load() != 1 {
		t.Errorf("Prepare ran %d times", calls.Load())
	}
	if _, failed, _ := sum.Counts(); failed != 1 || !errors.Is(err, engine.ErrSomeHostsFailed) {
		t.Errorf("failed %d, err %v", failed, err)
	}
	for _, h := range []string{"gpu-002", "gpu-003"} {
		if got := fleet.Executor(h).Names(); !reflect.DeepEqual(got, []string{"join"}) {
			t.Errorf("%s ran %v", h, got)
		}
	}
	// The step Prepare ran belongs to the phase, after its start.
	var order []string
	for _, e := range rec.Events() {
		if e.Phase == "join" && (e.Type == event.PhaseStart || e.Type == event.StepStart) {
			order = append(order, string(e.Type)+":"+e.Host+":"+e.Step)
		}
		if strings.Contains(e.Line+e.Script+e.Message, "tok-123") {
			t.Errorf("token in event %+v", e)
		}
	}
	if len(order) < 2 || order[0] != "phase_start::" || order[1] != "step_start:gpu-001:token" {
		t.Errorf("event order %v", order)
	}
}

// A failed Prepare fails every target with its error; no Run starts.
func TestPrepareFailureFailsTheTargets(t *testing.T) {
	t.Parallel()
	var ran atomic.Int32
	p := &preparePhase{
		funcPhase: funcPhase{name: "p", run: func(context.Context, *engine.Host) error { ran.Add(1); return nil }},
		prepare: func(context.Context, []*engine.Host, []*engine.Host) error {
			return errors.New("no control plane answers")
		},
	}
	after := &funcPhase{name: "after", run: func(context.Context, *engine.Host) error { ran.Add(1); return nil }}
	sum, err, _ := run(t, &engine.Runner{Phases: []engine.Phase{p, after}}, &enginetest.Fleet{}, 3)
	if ran.Load() != 0 {
		t.Errorf("%d runs after a failed prepare", ran.Load())
	}
	for _, h := range sum.Hosts {
		if h.Status != engine.StatusFailed || h.Phase != "p" || !strings.Contains(h.Err.Error(), "prepare: no control plane answers") {
			t.Errorf("%s: %s %s %v", h.Host, h.Status, h.Phase, h.Err)
		}
	}
	if !errors.Is(err, engine.ErrSomeHostsFailed) {
		t.Errorf("err %v", err)
	}
}

// A panic in Prepare is the targets' failure, not the process's.
func TestPreparePanic(t *testing.T) {
	t.Parallel()
	p := &preparePhase{funcPhase: funcPhase{name: "p"},
		prepare: func(context.Context, []*engine.Host, []*engine.Host) error { panic("bug") }}
	sum, _, _ := run(t, &engine.Runner{Phases: []engine.Phase{p}}, &enginetest.Fleet{}, 2)
	if _, failed, _ := sum.Counts(); failed != 2 {
		t.Errorf("%+v", sum.Hosts)
	}
	for _, h := range sum.Hosts {
		if h.Err == nil || !strings.HasSuffix(h.Err.Error(), "panic: bug") || strings.Contains(h.Err.Error(), "goroutine ") {
			t.Errorf("%s: error %v, want the panic without its stack", h.Host, h.Err)
		}
	}
}

// The summary carries what the run learned about each host.
func TestSummaryCarriesFacts(t *testing.T) {
	t.Parallel()
	p := &funcPhase{name: "facts", run: func(_ context.Context, h *engine.Host) error {
		h.Facts = &facts.Facts{Hostname: "real-" + h.Name()}
		return nil
	}}
	sum, err, _ := run(t, &engine.Runner{Phases: []engine.Phase{p}}, &enginetest.Fleet{DialErr: map[string]error{"gpu-002": errors.New("down")}}, 2)
	if !errors.Is(err, engine.ErrSomeHostsFailed) {
		t.Fatal(err)
	}
	if f := sum.Hosts[0].Facts; f == nil || f.Hostname != "real-gpu-001" {
		t.Errorf("gpu-001 facts %+v", f)
	}
	if sum.Hosts[1].Facts != nil {
		t.Errorf("unreachable host has facts")
	}
}

// A Scoped phase runs on its named hosts only (its own Targeter choosing
// among them), while its Prepare still sees every healthy host: add-node's
// new hosts join through a manager the phase does not run on. A scoped
// phase that stops the run still does.
func TestScopedRunsOnTheNamedHostsOnly(t *testing.T) {
	t.Parallel()
	fleet := &enginetest.Fleet{Handler: byScript(map[string]ssh.Result{"token": {Stdout: []byte("t\n")}})}
	var ran []string
	var mu sync.Mutex
	join := &preparePhase{
		funcPhase: funcPhase{
			name:    "join",
			targets: func(hs []*engine.Host) []*engine.Host { return hs[1:] }, // not the first of those it is given
			run: func(ctx context.Context, h *engine.Host) error {
				mu.Lock()
				ran = append(ran, h.Name())
				mu.Unlock()
				return nil
			},
		},
		prepare: func(ctx context.Context, all, targets []*engine.Host) error {
			if got := names(all); !reflect.DeepEqual(got, []string{"gpu-001", "gpu-002", "gpu-003", "gpu-004"}) {
				t.Errorf("Prepare's all = %v", got)
			}
			if got := names(targets); !reflect.DeepEqual(got, []string{"gpu-004"}) {
				t.Errorf("Prepare's targets = %v", got)
			}
			_, err := all[0].Run(ctx, "token", ssh.Command{Script: "token"})
			return err
		},
	}
	fail := &funcPhase{name: "checks", stopRun: true, run: func(_ context.Context, h *engine.Host) error {
		if h.Name() == "gpu-003" {
			return errors.New("not ready")
		}
		return nil
	}}
	r := &engine.Runner{Phases: []engine.Phase{engine.Scoped{Phase: join, Hosts: []string{"gpu-002", "gpu-004"}}}}
	run(t, r, fleet, 4)
	if !reflect.DeepEqual(ran, []string{"gpu-004"}) {
		t.Errorf("ran on %v", ran)
	}
	ran = nil
	r = &engine.Runner{Phases: []engine.Phase{engine.Scoped{Phase: fail, Hosts: []string{"gpu-003"}}, join}}
	sum, _, _ := run(t, r, &enginetest.Fleet{Handler: fleet.Handler}, 4)
	if _, failed, _ := sum.Counts(); failed != 1 || len(ran) != 0 {
		t.Errorf("a scoped phase that stops the run: %d failed, later phase ran on %v", failed, ran)
	}
}
