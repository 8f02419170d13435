package flow

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gpukit/gpukit/internal/connect"
	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/ssh"
	"github.com/gpukit/gpukit/pkg/ui"
)

// InputError is bad input found before any host was contacted: a phase
// name that is none, a secret that cannot be read, a rollout that cannot be
// resumed. Nothing changed anywhere; the CLI exits 2.
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

// badInput marks err as bad input; nil stays nil.
func badInput(err error) error {
	if err == nil {
		return nil
	}
	return &InputError{Err: err}
}

// RunOptions are how a command runs its flow: the choices every such
// command shares, and where the run's events go.
type RunOptions struct {
	// Concurrency bounds the hosts worked on at once.
	Concurrency int
	// LogDir receives the run's logs, secrets redacted.
	LogDir string
	// Only and Skip select phases by name or group prefix.
	Only, Skip []string
	// DryRun records writes instead of making them.
	DryRun bool
	// ReadTimeout and WriteTimeout bound each remote step (engine.Runner).
	ReadTimeout, WriteTimeout time.Duration
	// Connect are the transport choices; Secrets says where the
	// inventory's secrets are read from.
	Connect connect.Options
	Secrets connect.Secrets
	// Note tells the operator, before the run starts, what it does other
	// than the inventory says (ssh.agent set but no agent runs: the key
	// file logs in alone); nil drops the notes.
	Note func(string)
	// Display opens what shows the run's events, once the phases and the
	// secrets are known good (a run refused for them shows nothing);
	// cancel stops the run (the live view's Ctrl-C). Run closes it when
	// the run ends.
	Display func(cancel context.CancelFunc) ui.Display
}

// Run runs f: it selects the phases, reads inv's secrets, then connects to
// f's machines over SSH and runs (a flow that works through the API from
// this machine, such as kubeflow deploy --kubeconfig, connects to nothing
// and reads no secret). Bad input is an *InputError and nothing runs; a run
// that started returns its summary.
func Run(ctx context.Context, inv *inventory.Inventory, f Flow, o RunOptions) (*engine.Summary, error) {
	if _, err := engine.SelectPhases(f.Phases, o.Only, o.Skip); err != nil {
		if errors.Is(err, engine.ErrUnknownPhase) {
			return nil, badInput(err)
		}
		return nil, err // a defect in the flow's phase list, not bad input
	}
	if f.local {
		dial := func(_ context.Context, m inventory.Machine) (engine.Executor, error) { return apiOnly{m.Name}, nil }
		return o.run(ctx, f, dial, nil)
	}
	// Only the machines the run connects to: a host it leaves alone
	// (--hosts) needs no secret, key or agent.
	run := *inv
	run.Machines = f.Machines
	cfgs, err := connect.Configs(&run, o.Connect, o.Secrets)
	if err != nil {
		return nil, badInput(err)
	}
	if o.Note != nil {
		for _, n := range cfgs.Notes {
			o.Note(n)
		}
	}
	d := cfgs.NewDialer()
	defer d.Close()
	return o.run(ctx, f, d.Dial, append(cfgs.Secrets, inv.SiteSecrets()...))
}

// run runs f's phases on its machines, reached through dial.
func (o RunOptions) run(ctx context.Context, f Flow, dial engine.Dialer, secrets []string) (*engine.Summary, error) {
	r := &engine.Runner{
		Name: f.Name, Phases: f.Phases, Concurrency: o.Concurrency,
		Only: o.Only, Skip: o.Skip, LogDir: o.LogDir, Redact: secrets, DryRun: o.DryRun,
		ReadTimeout: o.ReadTimeout, WriteTimeout: o.WriteTimeout,
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	display := o.Display(cancel)
	r.Sink = display
	sum, runErr := r.Run(ctx, f.Machines, dial)
	if err := display.Close(); err != nil && runErr == nil {
		runErr = err
	}
	if sum == nil && runErr != nil && !errors.Is(runErr, context.Canceled) {
		// Nothing ran: the runner refused its setup (the log directory).
		return nil, badInput(runErr)
	}
	return sum, runErr
}

// apiOnly is the executor of the machine gpukit runs on with --kubeconfig:
// the flow's phases work through the API, never on a host.
type apiOnly struct{ name string }

func (a apiOnly) Run(context.Context, ssh.Command) (ssh.Result, error) {
	return ssh.Result{}, fmt.Errorf("%s: no host to run commands on (--kubeconfig)", a.name)
}

func (a apiOnly) Upload(context.Context, ssh.File) error {
	return fmt.Errorf("%s: no host to upload to (--kubeconfig)", a.name)
}

func (apiOnly) Close() error { return nil }
