package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/gpukit/gpukit/pkg/event"
	"github.com/gpukit/gpukit/pkg/facts"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/redact"
	"github.com/gpukit/gpukit/pkg/ssh"
)

// Host is one machine during a run: its inventory spec, what was probed about
// it, and the one connection every step of the run goes through. Phases act
// on it only through Run, Apply and Upload, which carry the dry-run gate,
// events, logging and redaction; the connection itself is not exported, so
// no write can bypass them.
//
// A Host is used by one goroutine at a time: the runner runs the phases of a
// host one after another. Its connection is the exception: other hosts'
// phases reach an API through it (Dialer, Remote), so it is guarded.
type Host struct {
	Machine inventory.Machine
	// Facts is set by the facts phase; nil before it has run.
	Facts *facts.Facts

	connMu  sync.Mutex // guards conn
	conn    Executor
	dialMu  sync.Mutex                                  // one redial at a time (the host's goroutine, or a Dialer's caller)
	redial  func(ctx context.Context) (Executor, error) // a new connection, registered with the run
	forget  func()                                      // unregisters conn from the run once closed
	run     *runState
	log     *logFile
	phase   string
	changed bool // a write ran (or, in dry-run, was planned)
}

// HostOptions configure a Host made outside a Runner (phase unit tests, a
// single-host command).
type HostOptions struct {
	DryRun bool
	// Sink receives the host's events; nil discards them.
	Sink event.Sink
	// Redactor removes secrets from events; nil removes none.
	Redactor *redact.Redactor
	// Phase is the phase name put on events.
	Phase string
}

// NewHost returns a host for m that runs its steps on exec.
func NewHost(m inventory.Machine, exec Executor, opts HostOptions) *Host {
	if opts.Sink == nil {
		opts.Sink = event.Discard
	}
	if opts.Redactor == nil {
		opts.Redactor = redact.New()
	}
	h := &Host{
		Machine: m,
		conn:    exec,
		phase:   opts.Phase,
		run: &runState{
			sink: opts.Sink, redactor: opts.Redactor, logs: &runLogs{redactor: opts.Redactor},
			dryRun: opts.DryRun, now: time.Now,
		},
	}
	return h
}

// Name is the inventory name of the host.
func (h *Host) Name() string { return h.Machine.Name }

// DryRun reports whether writes are recorded instead of made.
func (h *Host) DryRun() bool { return h.state().dryRun }

// Changed reports whether a write ran on the host in this run (in dry-run:
// whether one was planned).
func (h *Host) Changed() bool { return h.changed }

// AddSecret registers values learned during the run (a join token, a
// certificate key) so that they are redacted from every later log line,
// event and error of every host.
func (h *Host) AddSecret(values ...string) { h.state().redactor.Add(values...) }

// Logf writes a line to the host's log only (not to events): details an
// operator reads after a failure.
func (h *Host) Logf(format string, args ...any) {
	h.log.write(h.state().now(), "", fmt.Sprintf(format, args...))
}

// StepOption changes how one step is run.
type StepOption func(*stepConfig)

type stepConfig struct {
	secretOutput bool
	dataOutput   bool
	timeout      time.Duration
}

// Deadlines of a step when the run and the step say nothing: a read only
// looks (nvidia-smi on a wedged GPU never answers: the step fails, named,
// instead of the run hanging); a write may install a driver and build its
// module.
const (
	DefaultReadTimeout  = 5 * time.Minute
	DefaultWriteTimeout = time.Hour
)

// Timeout bounds the step by d instead of the run's deadline for its kind:
// a step known to take long (a Kubeflow wait) or to be quick.
func Timeout(d time.Duration) StepOption { return func(c *stepConfig) { c.timeout = d } }

// SecretOutput keeps the step's stdout out of events and logs, for commands
// that print a secret (kubeadm token create). The output is still returned in
// the Result; register the secret with AddSecret before passing it on.
func SecretOutput() StepOption { return func(c *stepConfig) { c.secretOutput = true } }

// DataOutput marks the step's stdout as data its caller parses (the facts
// probe's key=value lines), not progress: it is logged as one block when the
// step ends instead of as output events line by line, which over a thousand
// hosts were tens of thousands of events nobody reads. Stderr still streams.
func DataOutput() StepOption { return func(c *stepConfig) { c.dataOutput = true } }

// Run runs a read: a probe that changes nothing on the host. It runs in
// dry-run too, so that plans are computed from the real state.
func (h *Host) Run(ctx context.Context, step string, cmd ssh.Command, opts ...StepOption) (ssh.Result, error) {
	return h.step(ctx, step, cmd, "read", opts)
}

// Apply runs a write. In dry-run it records a Planned event with the script
// instead, and returns an empty Result and no error.
func (h *Host) Apply(ctx context.Context, step string, cmd ssh.Command, opts ...StepOption) (ssh.Result, error) {
	h.changed = true
	if h.DryRun() {
		h.emit(event.Event{Type: event.Planned, Step: step, Script: planScript(cmd)})
		return ssh.Result{}, nil
	}
	return h.step(ctx, step, cmd, "apply", opts)
}

// Upload places f on the host; in dry-run it records a Planned event naming
// the destination. The content is never logged: uploads carry configuration
// that may hold secrets.
func (h *Host) Upload(ctx context.Context, step string, f ssh.File) error {
	what := fmt.Sprintf("upload %s (mode %04o)", f.Path, f.Mode.Perm())
	h.changed = true
	if h.DryRun() {
		h.emit(event.Event{Type: event.Planned, Step: step, Message: what})
		return nil
	}
	h.emit(event.Event{Type: event.StepStart, Step: step})
	h.Logf("$ %s: %s", step, what)
	c := h.revive(ctx, step)
	if c == nil {
		return fmt.Errorf("%s: not connected", step)
	}
	start := time.Now()
	err := c.Upload(ctx, f)
	return h.finish(ctx, step, start, err)
}

// DefaultReconnectInterval is the pause between connection attempts of
// Reconnect (Runner.ReconnectInterval overrides it).
const DefaultReconnectInterval = 2 * time.Second

// Reconnect closes the host's connection and connects again, for a step that
// takes the host away (a reboot). It dials until a connection succeeds and
// ready, run on it (through the host's step helpers), says the host is back
// as expected (a new boot id), or timeout passes - also during an attempt:
// then the error says so and the host is failed by its phase. In dry-run
// nothing was taken away: it records the wait and returns.
func (h *Host) Reconnect(ctx context.Context, step string, timeout time.Duration, ready func(ctx context.Context) (bool, error)) error {
	if h.DryRun() {
		h.emit(event.Event{Type: event.Planned, Step: step, Message: fmt.Sprintf("reconnect, waiting up to %s for the host to come back", timeout)})
		return nil
	}
	h.emit(event.Event{Type: event.StepStart, Step: step})
	h.Logf("$ %s: reconnect within %s", step, timeout)
	start := time.Now()
	if h.redial == nil {
		return h.finish(ctx, step, start, errors.New("cannot reconnect: the host is not part of a run"))
	}
	h.disconnect() // the host is going away
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	interval := cmp.Or(h.state().reconnectInterval, DefaultReconnectInterval)
	var last error
	for attempt := 1; ; attempt++ {
		err := h.connectReady(wctx, ready)
		if err == nil {
			h.Logf("  %s: back after %s (%d attempts)", step, time.Since(start).Round(time.Millisecond), attempt)
			return nil
		}
		if ctx.Err() != nil {
			return h.finish(ctx, step, start, ctx.Err())
		}
		if wctx.Err() != nil { // the deadline passed, maybe cutting this attempt short
			if last == nil {
				last = err
			}
			return h.finish(ctx, step, start, fmt.Errorf("%s did not come back within %s: %w", h.Name(), timeout, last))
		}
		last = err
		h.Logf("  %s: attempt %d: %v", step, attempt, err)
		t := time.NewTimer(interval)
		select {
		case <-wctx.Done():
			t.Stop()
		case <-t.C:
		}
	}
}

// connectReady dials once and asks ready; the connection is kept only when
// the host is back.
func (h *Host) connectReady(ctx context.Context, ready func(ctx context.Context) (bool, error)) error {
	ex, err := h.redial(ctx)
	if err != nil {
		return err
	}
	h.setExecutor(ex)
	ok := true
	if ready != nil {
		ok, err = ready(ctx)
	}
	if err == nil && ok {
		return nil
	}
	h.disconnect()
	if err == nil {
		err = errors.New("connected, but not back yet")
	}
	return err
}

// alive is a connection that knows whether it still stands (ssh.Client).
type alive interface{ Alive() bool }

// revive dials the host again when its connection ended between two steps -
// the bastion under it restarted (another host's reboot, when the bastion is
// a cluster host too), the link dropped - so that a step that has not begun
// runs on a new connection instead of failing on the dead one. A step cut
// short by a lost connection still fails: what it did is unknown. When the
// dial fails too, the step fails on the dead connection, naming its cause.
func (h *Host) revive(ctx context.Context, step string) Executor {
	c := h.executor()
	if a, ok := c.(alive); !ok || a.Alive() || h.redial == nil {
		return c
	}
	h.dialMu.Lock()
	defer h.dialMu.Unlock()
	// Another goroutine may have dialled while this one waited.
	c = h.executor()
	if a, ok := c.(alive); !ok || a.Alive() {
		return c
	}
	h.Logf("  %s: the connection ended since the last step; dialling again", step)
	ex, err := h.redial(ctx)
	if err != nil {
		h.Logf("  %s: %v", step, err)
		return c
	}
	_ = c.Close()
	h.setExecutor(ex)
	return ex
}

// executor is the host's connection now (nil when it has none).
func (h *Host) executor() Executor {
	h.connMu.Lock()
	defer h.connMu.Unlock()
	return h.conn
}

func (h *Host) setExecutor(ex Executor) {
	h.connMu.Lock()
	defer h.connMu.Unlock()
	h.conn = ex
}

// disconnect closes the host's connection and takes it out of the run's.
func (h *Host) disconnect() {
	c := h.executor()
	if c == nil {
		return
	}
	_ = c.Close()
	h.setExecutor(nil)
	if h.forget != nil {
		h.forget()
	}
}

func (h *Host) step(ctx context.Context, step string, cmd ssh.Command, kind string, opts []StepOption) (ssh.Result, error) {
	var cfg stepConfig
	for _, o := range opts {
		o(&cfg)
	}
	if cmd.Name == "" {
		cmd.Name = step
	}
	h.emit(event.Event{Type: event.StepStart, Step: step})
	h.Logf("$ %s %s:\n%s", kind, step, indent(planScript(cmd)))
	conn := h.revive(ctx, step)
	if conn == nil {
		return ssh.Result{}, fmt.Errorf("%s: not connected", step)
	}
	output := func(s event.Stream) *lineWriter {
		return &lineWriter{emit: func(line string) {
			h.emit(event.Event{Type: event.Output, Step: step, Stream: s, Line: line})
		}}
	}
	stderr := output(event.Stderr)
	cmd.Stderr = tee(cmd.Stderr, stderr)
	var stdout *lineWriter
	switch {
	case cfg.secretOutput:
		h.Logf("(stdout of %s is secret and not logged)", step)
	case cfg.dataOutput:
		// logged below, at once
	default:
		stdout = output(event.Stdout)
		cmd.Stdout = tee(cmd.Stdout, stdout)
	}
	what, limit := "read", cmp.Or(h.state().readTimeout, DefaultReadTimeout)
	if kind == "apply" {
		what, limit = "write", cmp.Or(h.state().writeTimeout, DefaultWriteTimeout)
	}
	if cfg.timeout != 0 {
		limit = cfg.timeout
	}
	sctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	start := time.Now()
	res, err := conn.Run(sctx, cmd)
	if stdout != nil {
		stdout.Flush()
	}
	stderr.Flush()
	if cfg.dataOutput && !cfg.secretOutput && len(res.Stdout) > 0 {
		h.log.write(time.Now(), "stdout| ", string(res.Stdout))
	}
	if err != nil && ctx.Err() == nil && errors.Is(sctx.Err(), context.DeadlineExceeded) {
		err = fmt.Errorf("no end within %s, the deadline of a %s (--%s-timeout): stopped", limit, what, what)
	}
	return res, h.finish(ctx, step, start, err)
}

// finish logs the end of a step and names the step in its error once.
func (h *Host) finish(ctx context.Context, step string, start time.Time, err error) error {
	took := time.Since(start).Round(time.Millisecond)
	if err == nil {
		h.Logf("  %s: ok in %s", step, took)
		return nil
	}
	if !strings.HasPrefix(err.Error(), step+":") {
		err = fmt.Errorf("%s: %w", step, err)
	}
	// Executors report a cancelled command in their own words; make sure the
	// runner can still tell cancellation from failure.
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		err = fmt.Errorf("%w (%w)", err, cerr)
	}
	h.Logf("  %s: FAILED in %s: %v", step, took, err)
	return err
}

func (h *Host) emit(e event.Event) {
	e.Host = h.Name()
	e.Phase = h.phase
	e = h.state().emit(e)
	if e.Type != event.StepStart { // the step header is logged with its script
		h.log.write(e.Time, "", describe(e))
	}
}

// state returns the run the host belongs to; a Host built as a literal (in a
// test) gets a quiet one.
func (h *Host) state() *runState {
	if h.run == nil {
		r := redact.New()
		h.run = &runState{sink: event.Discard, redactor: r, logs: &runLogs{redactor: r}, now: time.Now}
	}
	return h.run
}

// planScript is the script as the host would receive it, with its arguments.
func planScript(cmd ssh.Command) string {
	if len(cmd.Args) == 0 {
		return cmd.Script
	}
	quoted := make([]string, len(cmd.Args))
	for i, a := range cmd.Args {
		quoted[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return "# args: " + strings.Join(quoted, " ") + "\n" + cmd.Script
}

func tee(caller io.Writer, ours io.Writer) io.Writer {
	if caller == nil {
		return ours
	}
	return io.MultiWriter(caller, ours)
}
