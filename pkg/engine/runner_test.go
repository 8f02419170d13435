package engine_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/engine/enginetest"
	"github.com/gpukit/gpukit/pkg/event"
	"github.com/gpukit/gpukit/pkg/ssh"
)

func TestRunAllHostsOK(t *testing.T) {
	t.Parallel()
	fleet := &enginetest.Fleet{Handler: byScript(map[string]ssh.Result{
		"probe": {Stdout: []byte("line one\nline two\n")},
	})}
	r := &engine.Runner{Name: "gpukit test", Phases: []engine.Phase{probeAndApply("a/one"), probeAndApply("a/two")}}
	sum, err, rec := run(t, r, fleet, 5)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if ok, failed, skipped := sum.Counts(); ok != 5 || failed != 0 || skipped != 0 || sum.Err() != nil {
		t.Fatalf("counts %d/%d/%d, err %v", ok, failed, skipped, sum.Err())
	}
	for name, e := range fleet.Executors() {
		if got, want := e.Names(), []string{"probe", "change", "probe", "change"}; !reflect.DeepEqual(got, want) {
			t.Errorf("%s ran %v, want %v", name, got, want)
		}
		if fleet.Dials(name) != 1 || e.Closes() != 1 {
			t.Errorf("%s: %d dials, %d closes; want one connection for the whole run", name, fleet.Dials(name), e.Closes())
		}
	}
	want := []string{
		"host_start:connect:", "host_done:connect:",
		"host_start:a/one:", "step_start:a/one:probe", "output:a/one:probe", "output:a/one:probe",
		"step_start:a/one:change", "host_done:a/one:",
		"host_start:a/two:", "step_start:a/two:probe", "output:a/two:probe", "output:a/two:probe",
		"step_start:a/two:change", "host_done:a/two:",
	}
	if got := hostEvents(rec, "gpu-003"); !reflect.DeepEqual(got, want) {
		t.Errorf("events of gpu-003:\n got %q\nwant %q", got, want)
	}
	evs := rec.Events()
	if first, last := evs[0], evs[len(evs)-1]; first.Type != event.RunStart || last.Type != event.RunDone ||
		!reflect.DeepEqual(first.Phases, []string{"connect", "a/one", "a/two"}) || last.Status != event.StatusOK || last.Done != 5 {
		t.Errorf("run events: first %+v, last %+v", first, last)
	}
	for _, e := range rec.OfType(event.PhaseDone) {
		if e.Done != 5 || e.Total != 5 {
			t.Errorf("phase done %s: %d of %d", e.Phase, e.Done, e.Total)
		}
	}
}

func TestConcurrencyIsBounded(t *testing.T) {
	t.Parallel()
	const limit, hosts = 4, 40
	fleet := &enginetest.Fleet{}
	// Each command waits until the runner has `limit` commands in flight
	// (or a short while, for the last ones): if the runner started more,
	// the gauge would show it.
	fleet.Handler = func(ctx context.Context, _ *enginetest.Executor, _ ssh.Command) (ssh.Result, error) {
		wait, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		fleet.Running.WaitFor(wait, limit)
		return ssh.Result{}, nil
	}
	fleet.BeforeDial = func(ctx context.Context, _ string) error {
		wait, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		fleet.Dialing.WaitFor(wait, limit)
		return nil
	}
	r := &engine.Runner{Concurrency: limit, Phases: []engine.Phase{probeAndApply("p")}}
	if _, err, _ := run(t, r, fleet, hosts); err != nil {
		t.Fatal(err)
	}
	if m := fleet.Running.Max(); m != limit {
		t.Errorf("max commands in flight = %d, want %d", m, limit)
	}
	if m := fleet.Dialing.Max(); m != limit {
		t.Errorf("max dials in flight = %d, want %d", m, limit)
	}
}

func TestFailedHostIsIsolated(t *testing.T) {
	t.Parallel()
	fleet := &enginetest.Fleet{
		DialErr: map[string]error{"gpu-004": errors.New("dial tcp 10.0.0.4:22: connection refused")},
		Handler: func(_ context.Context, e *enginetest.Executor, cmd ssh.Command) (ssh.Result, error) {
			if e.Host == "gpu-002" && cmd.Name == "change" {
				return ssh.Result{ExitCode: 100, Stderr: []byte("E: Unable to locate package nvidia-driver-580\n")}, nil
			}
			return ssh.Result{}, nil
		},
	}
	r := &engine.Runner{Phases: []engine.Phase{probeAndApply("nvidia/driver"), probeAndApply("runtime/toolkit")}}
	sum, err, rec := run(t, r, fleet, 5)
	if !errors.Is(err, engine.ErrSomeHostsFailed) {
		t.Fatalf("err = %v, want ErrSomeHostsFailed", err)
	}
	failed := sum.Failed()
	if len(failed) != 2 || failed[0].Host != "gpu-002" || failed[0].Phase != "nvidia/driver" ||
		failed[1].Host != "gpu-004" || failed[1].Phase != "connect" {
		t.Fatalf("failed hosts: %+v", failed)
	}
	wantMsg := "host gpu-002: phase nvidia/driver: change: exit status 100: E: Unable to locate package nvidia-driver-580"
	if failed[0].Err.Error() != wantMsg {
		t.Errorf("error:\n got %q\nwant %q", failed[0].Err, wantMsg)
	}
	var he *engine.HostError
	var xe *ssh.ExitError
	if !errors.As(err, &he) || !errors.As(failed[0].Err, &xe) || xe.Code != 100 {
		t.Errorf("error chain lost: %v", err)
	}
	if !strings.Contains(err.Error(), "2 of 5 hosts failed") || !strings.Contains(err.Error(), wantMsg) {
		t.Errorf("run error: %v", err)
	}
	// The failed host took no part in the next phase; the others did.
	if got := fleet.Executor("gpu-002").Names(); !reflect.DeepEqual(got, []string{"probe", "change"}) {
		t.Errorf("gpu-002 ran %v after failing", got)
	}
	if got := fleet.Executor("gpu-005").Names(); len(got) != 4 {
		t.Errorf("gpu-005 ran %v, want both phases", got)
	}
	for _, e := range rec.OfType(event.PhaseDone) {
		if e.Phase == "runtime/toolkit" && (e.Total != 3 || e.Done != 3) {
			t.Errorf("second phase ran on %d hosts, want the 3 healthy", e.Total)
		}
	}
	fails := rec.OfType(event.HostFailed)
	if len(fails) != 2 || fails[1].Err != "change: exit status 100: E: Unable to locate package nvidia-driver-580" {
		t.Errorf("host_failed events: %+v", fails)
	}
	if last := rec.Events()[len(rec.Events())-1]; last.Status != event.StatusFailed || last.Failed != 2 || last.Done != 3 {
		t.Errorf("run_done: %+v", last)
	}
}

// A phase that already names its host keeps its HostError: added once.
func TestHostErrorAddedOnce(t *testing.T) {
	t.Parallel()
	p := &funcPhase{name: "p", run: func(_ context.Context, h *engine.Host) error {
		return fmt.Errorf("wrapped: %w", &engine.HostError{Host: h.Name(), Phase: "p", Err: errors.New("boom")})
	}}
	sum, _, _ := run(t, &engine.Runner{Phases: []engine.Phase{p}}, &enginetest.Fleet{}, 1)
	if got := sum.Hosts[0].Err.Error(); got != "host gpu-001: phase p: boom" {
		t.Errorf("error = %q", got)
	}
}

func TestPanicFailsOnlyThatHost(t *testing.T) {
	t.Parallel()
	p := &funcPhase{name: "p", run: func(_ context.Context, h *engine.Host) error {
		if h.Name() == "gpu-001" {
			panic("nil map")
		}
		return nil
	}}
	sum, err, _ := run(t, &engine.Runner{Phases: []engine.Phase{p}}, &enginetest.Fleet{}, 3)
	if !errors.Is(err, engine.ErrSomeHostsFailed) || len(sum.Failed()) != 1 ||
		!strings.Contains(sum.Failed()[0].Err.Error(), "panic: nil map") {
		t.Fatalf("err %v, failed %+v", err, sum.Failed())
	}
}

func TestStopRunOnFailure(t *testing.T) {
	t.Parallel()
	pre := &funcPhase{name: "preflight/checks", stopRun: true, run: func(_ context.Context, h *engine.Host) error {
		if h.Name() == "gpu-001" || h.Name() == "gpu-003" {
			return errors.New("secure boot is on")
		}
		return nil
	}}
	next := probeAndApply("nvidia/driver")
	sum, err, rec := run(t, &engine.Runner{Phases: []engine.Phase{pre, next}}, &enginetest.Fleet{}, 4)
	if !errors.Is(err, engine.ErrSomeHostsFailed) {
		t.Fatalf("err = %v", err)
	}
	// Both failures are reported (the phase finished on every host) ...
	if len(sum.Failed()) != 2 {
		t.Errorf("failed: %+v", sum.Failed())
	}
	// ... and the healthy hosts went no further.
	for _, name := range []string{"gpu-002", "gpu-004"} {
		h, _ := sum.Host(name)
		if h.Status != engine.StatusSkipped || h.Phase != "nvidia/driver" || !strings.Contains(h.Reason, "preflight/checks failed on 2 hosts") {
			t.Errorf("%s: %+v", name, h)
		}
	}
	for _, e := range rec.OfType(event.PhaseStart) {
		if e.Phase == "nvidia/driver" {
			t.Error("the phase after a run-stopping failure started")
		}
	}
}

func TestTargetsLimitThePhase(t *testing.T) {
	t.Parallel()
	var ran []string
	p := &funcPhase{
		name:    "kubernetes/init",
		targets: func(hosts []*engine.Host) []*engine.Host { return hosts[1:2] },
		run:     func(_ context.Context, h *engine.Host) error { ran = append(ran, h.Name()); return nil },
	}
	sum, err, rec := run(t, &engine.Runner{Phases: []engine.Phase{p}}, &enginetest.Fleet{}, 3)
	if err != nil || !reflect.DeepEqual(ran, []string{"gpu-002"}) {
		t.Fatalf("err %v, ran on %v", err, ran)
	}
	if ok, _, _ := sum.Counts(); ok != 3 {
		t.Errorf("hosts outside the target set are not failed: %+v", sum.Hosts)
	}
	if ps := rec.OfType(event.PhaseStart); ps[1].Total != 1 {
		t.Errorf("phase total = %d, want 1", ps[1].Total)
	}
}

func TestShouldRunSkipsConvergedHosts(t *testing.T) {
	t.Parallel()
	p := probeAndApply("nvidia/driver")
	p.shouldRun = func(ctx context.Context, h *engine.Host) (bool, string, error) {
		res, err := h.Run(ctx, "driver version", ssh.Command{Script: "cat /sys/module/nvidia/version"})
		if err != nil {
			return false, "", err
		}
		if string(res.Stdout) == "580.95.05\n" {
			return false, "driver 580.95.05 already installed", nil
		}
		return true, "", nil
	}
	fleet := &enginetest.Fleet{Handler: func(_ context.Context, e *enginetest.Executor, cmd ssh.Command) (ssh.Result, error) {
		if cmd.Name == "driver version" && e.Host != "gpu-002" {
			return ssh.Result{Stdout: []byte("580.95.05\n")}, nil
		}
		return ssh.Result{}, nil
	}}
	sum, err, rec := run(t, &engine.Runner{Phases: []engine.Phase{p}}, fleet, 3)
	if err != nil {
		t.Fatal(err)
	}
	if got := fleet.Executor("gpu-001").Names(); !reflect.DeepEqual(got, []string{"driver version"}) {
		t.Errorf("converged host ran %v", got)
	}
	if got := fleet.Executor("gpu-002").Names(); len(got) != 3 {
		t.Errorf("outdated host ran %v", got)
	}
	skips := rec.OfType(event.HostSkipped)
	if len(skips) != 2 || skips[0].Message != "driver 580.95.05 already installed" {
		t.Errorf("skip events: %+v", skips)
	}
	h, _ := sum.Host("gpu-001")
	if h.Status != engine.StatusOK || h.Phases[1].Status != engine.StatusSkipped {
		t.Errorf("converged host summary: %+v", h)
	}
	if pd := rec.OfType(event.PhaseDone)[1]; pd.Done != 1 || pd.Skipped != 2 {
		t.Errorf("phase done: %+v", pd)
	}
}

func TestDryRunRunsReadsAndRecordsWrites(t *testing.T) {
	t.Parallel()
	upload := &funcPhase{name: "files", run: func(ctx context.Context, h *engine.Host) error {
		return h.Upload(ctx, "write config", ssh.File{Path: "/etc/gpukit.conf", Mode: 0o644, Content: strings.NewReader("x")})
	}}
	planned := &planPhase{
		funcPhase: funcPhase{name: "planned", run: func(context.Context, *engine.Host) error {
			t.Error("Run called in dry-run on a Planner")
			return nil
		}},
		plan: func(context.Context, *engine.Host) ([]engine.PlannedAction, error) {
			return []engine.PlannedAction{{Step: "kubeadm join", Script: "kubeadm join ..."}}, nil
		},
	}
	fleet := &enginetest.Fleet{}
	r := &engine.Runner{DryRun: true, Phases: []engine.Phase{probeAndApply("p"), upload, planned}}
	sum, err, rec := run(t, r, fleet, 2)
	if err != nil || !sum.DryRun {
		t.Fatal(err)
	}
	e := fleet.Executor("gpu-001")
	if got := e.Names(); !reflect.DeepEqual(got, []string{"probe"}) || len(e.Uploads()) != 0 {
		t.Errorf("dry-run executed %v and uploaded %d files; want only the read", got, len(e.Uploads()))
	}
	var got []string
	for _, ev := range rec.OfType(event.Planned) {
		if ev.Host == "gpu-001" {
			got = append(got, ev.Phase+"|"+ev.Step+"|"+ev.Script+"|"+ev.Message)
		}
	}
	want := []string{
		"p|change|echo change p|",
		"files|write config||upload /etc/gpukit.conf (mode 0644)",
		"planned|kubeadm join|kubeadm join ...|",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("planned:\n got %q\nwant %q", got, want)
	}
	if !rec.Events()[0].DryRun {
		t.Error("run_start does not say dry-run")
	}
}

func TestCleanUpRunsInReverseOrder(t *testing.T) {
	t.Parallel()
	var order []string
	mk := func(name string, fail bool) *funcPhase {
		return &funcPhase{
			name: name,
			run: func(context.Context, *engine.Host) error {
				if fail {
					return errors.New("boom")
				}
				return nil
			},
			cleanUp: func(ctx context.Context, h *engine.Host) error {
				order = append(order, name)
				_, err := h.Apply(ctx, "rm tmp", ssh.Command{Script: "rm -rf /tmp/gpukit-" + name})
				return err
			},
		}
	}
	_, _, _ = run(t, &engine.Runner{Phases: []engine.Phase{mk("a", false), mk("b", true), mk("c", false)}}, &enginetest.Fleet{}, 1)
	if !reflect.DeepEqual(order, []string{"b", "a"}) {
		t.Errorf("clean up order %v, want [b a] (the failed phase too, not the one that never ran)", order)
	}
}

func TestSkipAndOnly(t *testing.T) {
	t.Parallel()
	phases := []engine.Phase{
		&funcPhase{name: "preflight/facts"}, &funcPhase{name: "nvidia/driver"},
		&funcPhase{name: "nvidia/toolkit"}, &funcPhase{name: "nvidia-extra"}, &funcPhase{name: "kubernetes/init"},
	}
	names := func(ps []engine.Phase) []string {
		var out []string
		for _, p := range ps {
			out = append(out, p.Name())
		}
		return out
	}
	for _, tc := range []struct {
		only, skip []string
		want       []string
	}{
		{nil, nil, []string{"preflight/facts", "nvidia/driver", "nvidia/toolkit", "nvidia-extra", "kubernetes/init"}},
		{[]string{"nvidia"}, nil, []string{"nvidia/driver", "nvidia/toolkit"}},
		{[]string{"nvidia/"}, nil, []string{"nvidia/driver", "nvidia/toolkit"}},
		{nil, []string{"nvidia"}, []string{"preflight/facts", "nvidia-extra", "kubernetes/init"}},
		{[]string{"nvidia", "kubernetes"}, []string{"nvidia/toolkit"}, []string{"nvidia/driver", "kubernetes/init"}},
		{[]string{"nvidia-extra"}, nil, []string{"nvidia-extra"}},
	} {
		got, err := engine.SelectPhases(phases, tc.only, tc.skip)
		if err != nil || !reflect.DeepEqual(names(got), tc.want) {
			t.Errorf("only %v skip %v: got %v, %v; want %v", tc.only, tc.skip, names(got), err, tc.want)
		}
	}
	// The engine names the unknown phase and which list it was in; flag
	// names are the CLI's business.
	_, err := engine.SelectPhases(phases, nil, []string{"nvidi"})
	var upe *engine.UnknownPhaseError
	if !errors.As(err, &upe) || !errors.Is(err, engine.ErrUnknownPhase) || upe.Name != "nvidi" || !upe.Skip ||
		strings.Join(upe.Valid, ",") != "preflight,preflight/facts,nvidia,nvidia/driver,nvidia/toolkit,nvidia-extra,kubernetes,kubernetes/init" ||
		strings.Contains(err.Error(), "--") {
		t.Errorf("unknown phase error: %#v", err)
	}
	r := &engine.Runner{Phases: phases, Only: []string{"nope"}}
	sum, err := r.Run(context.Background(), enginetest.Hosts(1), (&enginetest.Fleet{}).Dial)
	if sum != nil || !errors.As(err, &upe) || upe.Skip || upe.Name != "nope" {
		t.Errorf("Run with an unknown phase to run only: %v, %v", sum, err)
	}
	for _, bad := range [][]engine.Phase{{&funcPhase{name: "a"}, &funcPhase{name: "a"}}, {&funcPhase{name: "connect"}}, {&funcPhase{name: "a/"}}} {
		if _, err := engine.SelectPhases(bad, nil, nil); err == nil {
			t.Errorf("phases %v accepted", names(bad))
		}
	}
}

// Only the selected phases run, with connect first.
func TestRunOnlySelectedPhases(t *testing.T) {
	t.Parallel()
	r := &engine.Runner{Phases: []engine.Phase{probeAndApply("a/x"), probeAndApply("b/y")}, Skip: []string{"a"}}
	sum, err, rec := run(t, r, &enginetest.Fleet{}, 1)
	if err != nil || !reflect.DeepEqual(sum.Phases, []string{"b/y"}) ||
		!reflect.DeepEqual(rec.Events()[0].Phases, []string{"connect", "b/y"}) {
		t.Fatalf("err %v, phases %v", err, sum.Phases)
	}
}

func TestCancelStopsPromptly(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// ignoresCtx: the step only returns when its connection is closed.
		ignoresCtx bool
	}{{"executor honours ctx", false}, {"executor ignores ctx", true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			fleet := &enginetest.Fleet{}
			fleet.Handler = func(ctx context.Context, e *enginetest.Executor, cmd ssh.Command) (ssh.Result, error) {
				if cmd.Name != "change" {
					return ssh.Result{}, nil
				}
				if tc.ignoresCtx {
					<-e.ClosedCh()
					return ssh.Result{}, errors.New("connection lost")
				}
				<-ctx.Done()
				return ssh.Result{}, ctx.Err()
			}
			later := &funcPhase{name: "later", run: func(context.Context, *engine.Host) error {
				t.Error("a phase started after cancel")
				return nil
			}}
			rec := &enginetest.Recorder{}
			r := &engine.Runner{Phases: []engine.Phase{probeAndApply("p"), later}, Concurrency: 3, Sink: rec, CancelGrace: 20 * time.Millisecond}
			go func() {
				fleet.Running.WaitFor(ctx, 3) // all slots stuck in "change"
				cancel()
			}()
			start := time.Now()
			sum, err := r.Run(ctx, enginetest.Hosts(10), fleet.Dial)
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("err = %v, want context.Canceled", err)
			}
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("cancel took %s", took)
			}
			if !sum.Cancelled || len(sum.Failed()) != 0 {
				t.Errorf("summary: cancelled %v, failed %+v", sum.Cancelled, sum.Failed())
			}
			for _, h := range sum.Hosts {
				if h.Status != engine.StatusSkipped || h.Reason != "cancelled" || h.Phase != "p" {
					t.Errorf("%s: %+v", h.Host, h)
				}
			}
			for name, e := range fleet.Executors() {
				if e.Closes() == 0 {
					t.Errorf("%s not closed", name)
				}
				if n := len(e.Names()); n > 2 {
					t.Errorf("%s ran %d commands", name, n)
				}
			}
			if last := rec.Events()[len(rec.Events())-1]; last.Type != event.RunDone || last.Status != event.StatusCancelled {
				t.Errorf("last event %+v", last)
			}
		})
	}
}

// Cancelled while connecting: no phase runs and every connection made is closed.
func TestCancelWhileConnecting(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	fleet := &enginetest.Fleet{BeforeDial: func(ctx context.Context, host string) error {
		if host == "gpu-003" {
			cancel()
		}
		return nil
	}}
	p := &funcPhase{name: "p", run: func(context.Context, *engine.Host) error { t.Error("phase ran"); return nil }}
	sum, err := (&engine.Runner{Phases: []engine.Phase{p}, Concurrency: 1}).Run(ctx, enginetest.Hosts(6), fleet.Dial)
	if !errors.Is(err, context.Canceled) || sum == nil {
		t.Fatalf("err = %v", err)
	}
	for _, e := range fleet.Executors() {
		if e.Closes() != 1 {
			t.Errorf("%s closed %d times", e.Host, e.Closes())
		}
	}
	if h, _ := sum.Host("gpu-006"); h.Status != engine.StatusSkipped || h.Phase != "connect" {
		t.Errorf("undialled host: %+v", h)
	}
}

func TestAllHostsFailToConnect(t *testing.T) {
	t.Parallel()
	fleet := &enginetest.Fleet{DialErr: map[string]error{"gpu-001": errors.New("no route"), "gpu-002": errors.New("no route")}}
	p := &funcPhase{name: "p", run: func(context.Context, *engine.Host) error { t.Error("phase ran"); return nil }}
	sum, err, _ := run(t, &engine.Runner{Phases: []engine.Phase{p}}, fleet, 2)
	if !errors.Is(err, engine.ErrSomeHostsFailed) || len(sum.Failed()) != 2 {
		t.Fatalf("err %v", err)
	}
	if got := sum.Failed()[0].Err.Error(); got != "host gpu-001: phase connect: no route" {
		t.Errorf("error %q", got)
	}
}

func TestSummaryErrListsAtMostTwenty(t *testing.T) {
	t.Parallel()
	fleet := &enginetest.Fleet{DialErr: map[string]error{}}
	for i := 1; i <= 30; i++ {
		fleet.DialErr[fmt.Sprintf("gpu-%03d", i)] = errors.New("refused")
	}
	sum, err, _ := run(t, &engine.Runner{}, fleet, 30)
	if sum.Err() == nil || err == nil {
		t.Fatal("no error")
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "30 of 30 hosts failed") || strings.Count(msg, "host gpu-") != 20 || !strings.Contains(msg, "and 10 more") {
		t.Errorf("message:\n%s", msg)
	}
	var hf *engine.HostsFailedError
	if !errors.As(err, &hf) || len(hf.Errs) != 30 {
		t.Errorf("not every host error reachable")
	}
}

func TestRunRejectsBadInput(t *testing.T) {
	t.Parallel()
	r := &engine.Runner{}
	if _, err := r.Run(context.Background(), nil, (&enginetest.Fleet{}).Dial); err == nil {
		t.Error("nil inventory accepted")
	}
	if _, err := r.Run(context.Background(), enginetest.Machines("a", "a"), (&enginetest.Fleet{}).Dial); err == nil {
		t.Error("repeated host name accepted")
	}
}

// A fleet of the size gpukit is built for: every host runs, the limit holds,
// each host has its log, and log files are released between phases.
func TestThousandHosts(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("1000-host run skipped in -short mode")
	}
	fleet := &enginetest.Fleet{Handler: byScript(map[string]ssh.Result{"probe": {Stdout: []byte("ok\n")}})}
	r := &engine.Runner{
		Phases: []engine.Phase{probeAndApply("a"), probeAndApply("b"), probeAndApply("c")},
		LogDir: t.TempDir(), Sink: event.Discard,
	}
	sum, err := r.Run(context.Background(), enginetest.Hosts(1000), fleet.Dial)
	if err != nil {
		t.Fatal(err)
	}
	if ok, _, _ := sum.Counts(); ok != 1000 {
		t.Fatalf("%d ok", ok)
	}
	if m := fleet.Running.Max(); m > engine.DefaultConcurrency {
		t.Errorf("%d commands in flight, limit %d", m, engine.DefaultConcurrency)
	}
	if logs, _ := filepath.Glob(filepath.Join(sum.LogDir, "gpu-*.log")); len(logs) != 1000 {
		t.Errorf("%d host logs", len(logs))
	}
}

func TestCleanUpSkippedOnCancel(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	p := &funcPhase{
		name:    "p",
		run:     func(context.Context, *engine.Host) error { cancel(); return nil },
		cleanUp: func(context.Context, *engine.Host) error { t.Error("clean up ran after cancel"); return nil },
	}
	if _, err := (&engine.Runner{Phases: []engine.Phase{p}}).Run(ctx, enginetest.Hosts(2), (&enginetest.Fleet{}).Dial); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v", err)
	}
}
