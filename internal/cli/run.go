package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/gpukit/gpukit/internal/connect"
	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/ui"
)

// runOptions are the flags of every command that runs phases on hosts.
type runOptions struct {
	inventory   string
	output      string
	concurrency int
	logDir      string
	skipPhases  []string
	onlyPhases  []string
	verbose     bool
	connect     connect.Options
}

func (o *runOptions) addFlags(f *pflag.FlagSet) {
	f.StringVarP(&o.inventory, "inventory", "i", "", "inventory file")
	f.StringVarP(&o.output, "output", "o", "auto", "auto (live view on a terminal, plain lines otherwise), plain or json (one event per line)")
	f.IntVar(&o.concurrency, "concurrency", engine.DefaultConcurrency, "hosts worked on at once")
	f.StringVar(&o.logDir, "log-dir", defaultLogDir(), "directory for per-run, per-host logs (secrets redacted)")
	f.StringSliceVar(&o.skipPhases, "skip-phases", nil, "phases to skip (name or group prefix, comma-separated)")
	f.StringSliceVar(&o.onlyPhases, "only-phases", nil, "run only these phases (name or group prefix, comma-separated)")
	f.BoolVarP(&o.verbose, "verbose", "v", false, "plain output: print every step and output line")
	f.BoolVar(&o.connect.AcceptNewHostKeys, "accept-new-host-keys", false,
		"trust hosts missing from known_hosts and record their keys (a changed key is still refused)")
}

func defaultLogDir() string {
	if d := os.Getenv("GPUKIT_LOG_DIR"); d != "" {
		return d
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return filepath.Join(os.TempDir(), "gpukit-logs")
	}
	return filepath.Join(home, ".gpukit", "logs")
}

func (o *runOptions) validate() error {
	switch o.output {
	case "auto", "plain", "json":
	default:
		return usage(fmt.Errorf("--output %q: want auto, plain or json", o.output))
	}
	if o.concurrency < 1 {
		return usage(fmt.Errorf("--concurrency %d: want 1 or more", o.concurrency))
	}
	return nil
}

// runPhases loads the inventory, resolves secrets, runs phases (built from
// the inventory) with the chosen display, and returns the summary. Only a
// run that could start returns a non-nil summary.
func runPhases(ctx context.Context, s Streams, o *runOptions, name string,
	phases func(*inventory.Inventory) []engine.Phase) (*inventory.Inventory, *engine.Summary, error) {
	if err := o.validate(); err != nil {
		return nil, nil, err
	}
	inv, err := loadInventory(o.inventory)
	if err != nil {
		return nil, nil, err
	}
	printWarnings(s.Err, inv)
	cfgs, err := connect.Configs(inv, o.connect, osSecrets(s))
	if err != nil {
		return inv, nil, usage(err)
	}
	r := &engine.Runner{
		Name: name, Phases: phases(inv), Concurrency: o.concurrency,
		Only: o.onlyPhases, Skip: o.skipPhases, LogDir: o.logDir, Redact: cfgs.Secrets,
	}
	if _, err := r.Selected(); err != nil {
		return inv, nil, usage(err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	display := chooseDisplay(s.Out, o, ui.WithTitle(name), ui.WithCancel(cancel), ui.WithVerbose(o.verbose))
	r.Sink = display
	d := cfgs.NewDialer()
	sum, runErr := r.Run(ctx, inv, d.Dial)
	d.Close()
	if err := display.Close(); err != nil && runErr == nil {
		runErr = err
	}
	if sum == nil && runErr != nil && !errors.Is(runErr, context.Canceled) {
		// Nothing ran: the runner refused its setup (phases, log directory).
		return inv, nil, usage(runErr)
	}
	return inv, sum, runErr
}

func chooseDisplay(out io.Writer, o *runOptions, opts ...ui.Option) ui.Display {
	if f, ok := out.(*os.File); ok {
		return ui.Choose(f, o.output, opts...)
	}
	if o.output == "json" {
		return ui.NewJSON(out)
	}
	return ui.NewPlain(out, opts...)
}

// runError maps a finished run's error to the exit code kinds.
func runError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, engine.ErrSomeHostsFailed):
		return &hostsFailedError{err: err}
	default:
		return err
	}
}
