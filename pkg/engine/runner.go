package engine

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/gpukit/gpukit/pkg/event"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/redact"
)

// Dialer opens the connection to one machine. The CLI passes one built on
// pkg/ssh; tests pass a recording executor. It must honour ctx (connect
// timeouts are its business).
type Dialer func(ctx context.Context, m inventory.Machine) (Executor, error)

// DefaultConcurrency is how many hosts are worked on at once unless
// Runner.Concurrency says otherwise.
const DefaultConcurrency = 64

// DefaultCancelGrace is how long running steps of a cancelled run get to
// return by themselves before their connections are closed under them.
const DefaultCancelGrace = 2 * time.Second

// Runner runs phases over the hosts of an inventory.
type Runner struct {
	// Name is the command, for events and logs ("gpukit init").
	Name   string
	Phases []Phase
	// Concurrency bounds the hosts worked on at once, per phase and while
	// connecting. Zero means DefaultConcurrency.
	Concurrency int
	// DryRun records writes as Planned events instead of making them.
	DryRun bool
	// Only and Skip select phases by name or group prefix (SelectPhases).
	Only, Skip []string
	// Sink receives the events; nil discards them.
	Sink event.Sink
	// LogDir, when set, receives a directory per run with run.log and one
	// log per host.
	LogDir string
	// Redact are the secrets (passwords, tokens) that must not appear in
	// logs, events or errors.
	Redact []string
	// CancelGrace overrides DefaultCancelGrace.
	CancelGrace time.Duration
	// ReconnectInterval overrides DefaultReconnectInterval.
	ReconnectInterval time.Duration
	// ReadTimeout and WriteTimeout bound each remote step (a read, a
	// write); zero: DefaultReadTimeout, DefaultWriteTimeout.
	ReadTimeout, WriteTimeout time.Duration
}

// Selected returns the phases that Only and Skip leave, or a usage error.
func (r *Runner) Selected() ([]Phase, error) {
	return SelectPhases(r.Phases, r.Only, r.Skip)
}

// hostRun is the runner's record of one host. Only the goroutine working on
// the host touches it; phases are separated by waits.
type hostRun struct {
	h      *Host
	status Status // empty while the host is healthy
	phase  string
	err    error
	reason string
	took   time.Duration
	phases []PhaseResult
	ran    []Phase // phases whose Run or Plan was called, for CleanUp
}

// Run connects to machines (the whole inventory, or the subset a command
// works on), runs the selected phases in order and returns the per-host
// summary.
//
// The error is nil when every host succeeded; Summary.Err() (wrapping
// ErrSomeHostsFailed) when some failed; ctx.Err() when the run was cancelled
// (the summary says how far it got); and a setup error (an
// *UnknownPhaseError, an unusable log directory) with a nil summary when
// nothing ran.
func (r *Runner) Run(ctx context.Context, machines []inventory.Machine, dial Dialer) (*Summary, error) {
	phases, err := r.Selected()
	if err != nil {
		return nil, err
	}
	if len(machines) == 0 || dial == nil {
		return nil, errors.New("engine: Run needs machines and a dialer")
	}
	if err := uniqueNames(machines); err != nil {
		return nil, err
	}
	redactor := redact.New(r.Redact...)
	start := time.Now()
	logs, err := openRunLogs(r.LogDir, start, redactor)
	if err != nil {
		return nil, err
	}
	defer logs.close()
	sink := r.Sink
	if sink == nil {
		sink = event.Discard
	}
	st := &runState{sink: sink, redactor: redactor, logs: logs, dryRun: r.DryRun, now: time.Now, reconnectInterval: r.ReconnectInterval,
		readTimeout: r.ReadTimeout, writeTimeout: r.WriteTimeout}
	limit := r.Concurrency
	if limit <= 0 {
		limit = DefaultConcurrency
	}

	hosts := make([]*hostRun, len(machines))
	for i, m := range machines {
		hosts[i] = &hostRun{h: &Host{Machine: m, run: st, log: logs.host(m.Name)}}
	}
	conns := newConnections(limit, func(i int, err error) {
		hosts[i].h.Logf("closing the connection: %v", err)
	})
	for i, hr := range hosts {
		hr.h.redial = func(ctx context.Context) (Executor, error) {
			ex, err := dial(ctx, hr.h.Machine)
			if err == nil && ex == nil {
				err = errors.New("dialer returned no connection")
			}
			if err != nil {
				return nil, err
			}
			if !conns.add(i, ex) { // cancelled and already closing
				_ = ex.Close()
				return nil, context.Cause(ctx)
			}
			if d, ok := ex.(describer); ok {
				hr.h.Logf("connected: %s", d.Describe())
			}
			return ex, nil
		}
		hr.h.forget = func() { conns.drop(i) }
	}
	names := make([]string, 0, len(phases)+1)
	names = append(names, ConnectPhase)
	for _, p := range phases {
		names = append(names, phaseNames(p)...)
	}
	st.emit(event.Event{Type: event.RunStart, Time: start, Title: r.Name, Total: len(hosts),
		Phases: names, Log: logs.dir, DryRun: r.DryRun})

	stopWatch := r.closeOnCancel(ctx, conns)

	// Connecting opens the first pipeline, with the host-local phases that
	// follow it: a host probes as soon as its own connection is up.
	next := hostLocalRun(phases, 0) // index of the first phase that did not run
	stopped := r.runPipeline(ctx, st, limit, r.connectStage(ctx, hosts), phases[:next], hosts)
	for next < len(phases) && ctx.Err() == nil && stopped == "" {
		healthy := healthyHosts(hosts)
		if len(healthy) == 0 {
			break
		}
		if ro, ok := asRollout(phases[next]); ok {
			r.runRollout(ctx, st, limit, ro, healthy)
			next++
			continue
		}
		n := max(hostLocalRun(phases, next), 1)
		stopped = r.runPipeline(ctx, st, limit, nil, phases[next:next+n], healthy)
		next += n
	}
	if ctx.Err() != nil {
		stopped = "cancelled"
	}
	if next < len(phases) && stopped != "" {
		markUnfinished(hosts, phases[next].Name(), stopped)
	}
	if ctx.Err() == nil {
		r.cleanUp(ctx, limit, hosts)
	}
	stopWatch()
	conns.closeAll()
	for _, hr := range hosts { // after the last lines about closing connections
		_ = hr.h.log.close()
	}

	sum := r.summary(ctx, start, names[1:], logs, hosts)
	ok, failed, skipped := sum.Counts()
	status := event.StatusOK
	switch {
	case sum.Cancelled:
		status = event.StatusCancelled
	case failed > 0:
		status = event.StatusFailed
	}
	counts := sum.HostCounts()
	st.emit(event.Event{Type: event.RunDone, Title: r.Name, Status: status, Done: ok, Failed: failed,
		Skipped: skipped, Total: len(hosts), Log: logs.dir, DurationMS: event.Millis(sum.Duration), Hosts: &counts})
	if err := ctx.Err(); err != nil {
		return sum, err
	}
	return sum, sum.Err()
}

// closeOnCancel closes every connection CancelGrace after ctx is done, so
// that a step stuck in an executor that ignores ctx cannot hold up Ctrl-C.
// The returned func stops the watch.
func (r *Runner) closeOnCancel(ctx context.Context, conns *connections) (stop func()) {
	grace := r.CancelGrace
	if grace <= 0 {
		grace = DefaultCancelGrace
	}
	quit := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		select {
		case <-ctx.Done():
		case <-quit:
			return
		}
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case <-t.C:
			conns.closeAll()
		case <-quit:
		}
	}()
	return func() { close(quit); <-done }
}

// connectStage dials every host; a host that cannot be reached fails in the
// connect phase and takes no part in the rest of the run.
func (r *Runner) connectStage(ctx context.Context, hosts []*hostRun) *stage {
	return &stage{name: ConnectPhase, title: "Connect to the hosts", hosts: hosts, work: func(hr *hostRun) (string, error) {
		ex, err := hr.h.redial(ctx)
		if err != nil {
			return "", err
		}
		hr.h.setExecutor(ex)
		return "", nil
	}}
}

// describer is an Executor that can say what it negotiated (pkg/ssh: user,
// address, key exchange), for the host's log.
type describer interface{ Describe() string }

// phaseStage is p on its targets among healthy. A Preparer's Prepare runs
// first, once; when it fails, every target fails with its error.
func (r *Runner) phaseStage(ctx context.Context, limit int, p Phase, healthy []*hostRun) stage {
	name := p.Name() // a Scoped phase's
	p, targets := unscope(p, healthy)
	if t, ok := p.(Targeter); ok {
		targets = pickTargets(targets, t)
	}
	var prepErr error
	s := stage{name: name, title: p.Title(), hosts: targets}
	if pr, ok := p.(Preparer); ok && len(targets) > 0 {
		s.before = func() { prepErr = prepare(ctx, p.Name(), pr, healthy, targets) }
	}
	// A phase's own limit bounds the hosts it changes at once (reboots), not
	// the hosts it looks at: the others decide, and are done, at the run's
	// concurrency.
	var slots chan struct{}
	if l, ok := p.(ParallelLimiter); ok && l.MaxParallel() > 0 && l.MaxParallel() < limit {
		slots = make(chan struct{}, l.MaxParallel())
	}
	s.work = func(hr *hostRun) (string, error) {
		if prepErr != nil {
			return "", prepErr
		}
		return invoke(ctx, p, hr, slots)
	}
	return s
}

// runPipeline runs phases on their targets among hosts as one pipeline,
// after lead (the connect stage) when there is one, and returns why the run
// stops there: the last phase, a RunStopper, failed on some host.
func (r *Runner) runPipeline(ctx context.Context, st *runState, limit int, lead *stage, phases []Phase, hosts []*hostRun) (stopped string) {
	var stages []stage
	if lead != nil {
		stages = append(stages, *lead)
	}
	for _, p := range phases {
		stages = append(stages, r.phaseStage(ctx, limit, p, hosts))
	}
	failed := r.pipeline(ctx, st, limit, stages)
	if len(phases) == 0 {
		return ""
	}
	if last, n := phases[len(phases)-1], failed[len(stages)-1]; n > 0 && stopsRun(last) {
		return fmt.Sprintf("run stopped: phase %s failed on %d hosts", last.Name(), n)
	}
	return ""
}

// prepare calls pr.Prepare with the hosts of the run. Steps it runs on a
// host are reported under the phase, like the phase's own.
func prepare(ctx context.Context, phase string, pr Preparer, healthy, targets []*hostRun) (err error) {
	all := make([]*Host, len(healthy))
	for i, hr := range healthy {
		hr.h.phase = phase
		all[i] = hr.h
	}
	ts := make([]*Host, len(targets))
	for i, hr := range targets {
		ts[i] = hr.h
	}
	defer func() {
		if v := recover(); v != nil {
			err = recovered(v, ts)
		}
	}()
	if err := pr.Prepare(ctx, all, ts); err != nil {
		return fmt.Errorf("prepare: %w", err)
	}
	return nil
}

// hostWork does one phase on one host and returns why it was skipped, if it
// was, or its error.
type hostWork func(hr *hostRun) (skipped string, err error)

// safely runs work, turning a panic into the host's error: one buggy phase
// on one host must not take down a run over a thousand hosts, nor leave
// their connections open.
func safely(hr *hostRun, work hostWork) (skipped string, err error) {
	defer func() {
		if v := recover(); v != nil {
			skipped, err = "", recovered(v, []*Host{hr.h})
		}
	}()
	return work(hr)
}

// recovered is a recovered panic as the hosts' error: the stack goes to
// their logs, not into the error that every event and the summary carry.
func recovered(v any, hosts []*Host) error {
	stack := debug.Stack()
	for _, h := range hosts {
		h.Logf("panic: %v\n%s", v, stack)
	}
	return fmt.Errorf("panic: %v", v)
}

// invoke is one phase on one host: ShouldRun, then Plan (dry-run) or Run,
// which waits for one of slots first when the phase has them.
func invoke(ctx context.Context, p Phase, hr *hostRun, slots chan struct{}) (string, error) {
	h := hr.h
	if s, ok := p.(ShouldRunner); ok {
		run, reason, err := s.ShouldRun(ctx, h)
		if err != nil {
			return "", err
		}
		if !run {
			if reason == "" {
				reason = "nothing to do"
			}
			return reason, nil
		}
	}
	hr.ran = append(hr.ran, p)
	if pl, ok := p.(Planner); ok && h.DryRun() {
		actions, err := pl.Plan(ctx, h)
		if len(actions) > 0 {
			h.changed = true
		}
		for _, a := range actions {
			e := event.Event{Type: event.Planned, Step: a.Step, Script: a.Script}
			if a.Path != "" {
				e.Message = "upload " + a.Path
			}
			h.emit(e)
		}
		return "", err
	}
	if slots != nil {
		select {
		case slots <- struct{}{}:
			defer func() { <-slots }()
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	return "", p.Run(ctx, h)
}

// record stores the outcome of one phase on one host and emits it. An error
// after cancellation is the cancellation, not a failure of the host.
func (r *Runner) record(ctx context.Context, st *runState, hr *hostRun, phase string, began time.Time, skipped string, err error) {
	h := hr.h
	took := st.now().Sub(began)
	hr.took += took
	res := PhaseResult{Phase: phase, Duration: took}
	ms := event.Millis(took)
	switch {
	case err != nil && ctx.Err() != nil:
		res.Status, res.Reason = StatusSkipped, "cancelled"
		hr.status, hr.phase, hr.reason = StatusSkipped, phase, "cancelled"
		h.emit(event.Event{Type: event.HostSkipped, Status: event.StatusCancelled, Message: "cancelled", DurationMS: ms})
	case err != nil:
		he := hostError(st.redactor, h.Name(), phase, err)
		res.Status, res.Reason = StatusFailed, he.Err.Error()
		hr.status, hr.phase, hr.err = StatusFailed, phase, he
		h.emit(event.Event{Type: event.HostFailed, Status: event.StatusFailed, Err: he.Err.Error(),
			Log: st.logs.hostPath(h.Name()), DurationMS: ms})
	case skipped != "":
		res.Status, res.Reason = StatusSkipped, skipped
		h.emit(event.Event{Type: event.HostSkipped, Status: event.StatusSkipped, Message: skipped, DurationMS: ms})
	default:
		res.Status = StatusOK
		h.emit(event.Event{Type: event.HostDone, Status: event.StatusOK, DurationMS: ms})
	}
	hr.phases = append(hr.phases, res)
}

// hostError adds host and phase to err exactly once, and redacts it: the
// error travels to the terminal through the summary.
func hostError(r *redact.Redactor, host, phase string, err error) *HostError {
	var he *HostError
	if errors.As(err, &he) && he.Host == host {
		return &HostError{Host: he.Host, Phase: he.Phase, Err: r.Error(he.Err)}
	}
	return &HostError{Host: host, Phase: phase, Err: r.Error(err)}
}

// cleanUp runs CleanUp of every phase that ran on a still-connected host,
// last phase first.
func (r *Runner) cleanUp(ctx context.Context, limit int, hosts []*hostRun) {
	forEach(ctx, limit, len(hosts), func(i int) {
		hr := hosts[i]
		if hr.h.executor() == nil {
			return
		}
		defer hr.h.log.close()
		for k := len(hr.ran) - 1; k >= 0; k-- {
			c, ok := hr.ran[k].(CleanUpper)
			if !ok {
				continue
			}
			hr.h.phase = hr.ran[k].Name()
			if err := c.CleanUp(ctx, hr.h); err != nil {
				hr.h.emit(event.Event{Type: event.Output, Stream: event.Stderr, Step: "clean up",
					Line: "clean up failed: " + err.Error()})
			}
		}
	})
}

func (r *Runner) summary(ctx context.Context, start time.Time, phases []string, logs *runLogs, hosts []*hostRun) *Summary {
	sum := &Summary{
		Name: r.Name, Started: start, Duration: time.Since(start), DryRun: r.DryRun,
		Cancelled: ctx.Err() != nil, Phases: phases, LogDir: logs.dir,
		Hosts: make([]HostResult, len(hosts)),
	}
	for i, hr := range hosts {
		status := hr.status
		if status == "" {
			status = StatusOK
		}
		sum.Hosts[i] = HostResult{
			Host: hr.h.Name(), Address: hr.h.Machine.Address, Status: status, Phase: hr.phase, Err: hr.err, Reason: hr.reason,
			Duration: hr.took, Phases: hr.phases, LogFile: logs.hostPath(hr.h.Name()), Facts: hr.h.Facts,
			Changed: hr.h.changed,
		}
	}
	return sum
}

// markUnfinished skips the healthy hosts that did not get to phase (and the
// ones after it) because the run stopped early.
func markUnfinished(hosts []*hostRun, phase, reason string) {
	for _, hr := range hosts {
		if hr.status == "" {
			hr.status, hr.phase, hr.reason = StatusSkipped, phase, reason
		}
	}
}

func healthyHosts(hosts []*hostRun) []*hostRun {
	var out []*hostRun
	for _, hr := range hosts {
		if hr.status == "" {
			out = append(out, hr)
		}
	}
	return out
}

// pickTargets maps a Targeter's choice back to the runner's records,
// ignoring hosts it invented or repeated.
func pickTargets(healthy []*hostRun, t Targeter) []*hostRun {
	byHost := make(map[*Host]*hostRun, len(healthy))
	list := make([]*Host, len(healthy))
	for i, hr := range healthy {
		byHost[hr.h] = hr
		list[i] = hr.h
	}
	var out []*hostRun
	for _, h := range t.Targets(list) {
		if hr, ok := byHost[h]; ok {
			out = append(out, hr)
			delete(byHost, h)
		}
	}
	return out
}

func uniqueNames(machines []inventory.Machine) error {
	seen := make(map[string]bool, len(machines))
	for _, m := range machines {
		if m.Name == "" || seen[m.Name] {
			return fmt.Errorf("engine: host name %q is empty or repeated", m.Name)
		}
		seen[m.Name] = true
	}
	return nil
}
