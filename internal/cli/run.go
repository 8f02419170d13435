package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpukit/gpukit/internal/connect"
	"github.com/gpukit/gpukit/internal/flow"
	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/localdir"
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
	// dryRun records writes instead of making them (init --dry-run, plan).
	dryRun bool
	// readTimeout and writeTimeout bound each remote step.
	readTimeout, writeTimeout time.Duration
	// overrides replace inventory versions (init --driver, --cuda, --toolkit).
	overrides inventory.Overrides
	// list prints the phases instead of running them (--list-phases);
	// flowOf builds them (phaseFlags).
	list   bool
	flowOf flowOf
	// data is the inventory file when the command read it already.
	data []byte
	// hosts restricts the run to these inventory hosts (--hosts, where
	// the command has it).
	hosts []string
}

// honours says which of the shared run flags a command can act on beyond
// those every run has: a command registers only these, so that its help
// lists no flag that cannot act and such a flag is refused (exit 2).
type honours struct {
	// writes: the command changes hosts (--write-timeout).
	writes bool
	// fanOut: it works on many hosts at once (--concurrency).
	fanOut bool
}

// The flags that select phases, as the user typed them.
const (
	flagOnlyPhases = "--only-phases"
	flagSkipPhases = "--skip-phases"
)

func (o *runOptions) addFlags(cmd *cobra.Command, h honours) {
	f := cmd.Flags()
	f.StringVarP(&o.inventory, "inventory", "i", "", "inventory file")
	_ = cmd.MarkFlagFilename("inventory", "yaml", "yml")
	addOutputFlag(cmd, &o.output)
	o.concurrency = engine.DefaultConcurrency
	if h.fanOut {
		f.IntVar(&o.concurrency, "concurrency", engine.DefaultConcurrency, "hosts worked on at once")
	}
	f.StringVar(&o.logDir, "log-dir", defaultLogDir(), "directory for per-run, per-host logs (secrets redacted)")
	_ = cmd.MarkFlagDirname("log-dir")
	f.StringSliceVar(&o.skipPhases, strings.TrimPrefix(flagSkipPhases, "--"), nil, "phases to skip (name or group prefix, comma-separated)")
	f.StringSliceVar(&o.onlyPhases, strings.TrimPrefix(flagOnlyPhases, "--"), nil, "run only these phases (name or group prefix, comma-separated)")
	f.BoolVarP(&o.verbose, "verbose", "v", false, "plain output: print every step and output line")
	f.BoolVar(&o.connect.AcceptNewHostKeys, "accept-new-host-keys", false,
		"trust hosts missing from known_hosts and record their keys (a changed key is still refused)")
	f.DurationVar(&o.readTimeout, "read-timeout", engine.DefaultReadTimeout, "deadline of each remote step that only reads (a host that stops answering is named, not waited for)")
	if h.writes {
		f.DurationVar(&o.writeTimeout, "write-timeout", engine.DefaultWriteTimeout, "deadline of each remote step that changes a host (a driver install with its module build)")
	}
}

// addHostsFlag is --hosts: the run works on these inventory hosts only;
// the shell completes the names from -i FILE.
func (o *runOptions) addHostsFlag(cmd *cobra.Command, help string) {
	cmd.Flags().StringSliceVar(&o.hosts, "hosts", nil, help)
	_ = cmd.RegisterFlagCompletionFunc("hosts", o.completeHosts)
}

// addOutputFlag is -o/--output, the same on every command; the shell
// completes its values.
func addOutputFlag(cmd *cobra.Command, p *string) {
	cmd.Flags().StringVarP(p, "output", "o", string(ui.FormatAuto), "auto (live view on a terminal, plain otherwise), plain, or json (one object per line)")
	_ = cmd.RegisterFlagCompletionFunc("output", completeOutput)
}

// decideOutput parses an --output value and decides, once, how the
// command's output is written.
func decideOutput(w io.Writer, value string) (ui.Output, error) {
	f, err := ui.ParseFormat(value)
	if err != nil {
		return ui.Output{}, usage(err)
	}
	return ui.Decide(w, f, os.Getenv), nil
}

func defaultLogDir() string {
	if d := os.Getenv("GPUKIT_LOG_DIR"); d != "" {
		return d
	}
	return localdir.Dir("logs")
}

// loaded is what a command has before it builds its flow: the inventory and
// the output decision.
type loaded struct {
	inv *inventory.Inventory
	out ui.Output
}

// load checks the flags and loads the inventory. Every problem is a usage
// error (exit 2), found before any host is contacted.
func (o *runOptions) load(s Streams) (*loaded, error) {
	out, err := decideOutput(s.Out, o.output)
	if err != nil {
		return nil, err
	}
	if o.concurrency < 1 {
		return nil, usage(fmt.Errorf("--concurrency %d: want 1 or more", o.concurrency))
	}
	inv, err := inventory.LoadFile(o.inventory, o.data, o.overrides)
	if err != nil {
		return nil, usage(err)
	}
	// Hosts written by DNS name: resolved once, here, as the cluster
	// advertises its nodes by IP; a name that resolves nowhere is bad input.
	ctx, cancel := context.WithTimeout(context.Background(), resolveTimeout)
	defer cancel()
	if err := inventory.ResolveNames(ctx, inv, func(ctx context.Context, host string) ([]netip.Addr, error) {
		return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	}); err != nil {
		return nil, usage(err)
	}
	// The registry mirror's CA and password: read here, so that a missing
	// file or variable stops the run before any host is touched.
	if err := inv.ReadSite(os.LookupEnv, os.ReadFile); err != nil {
		return nil, usage(err)
	}
	printWarnings(s.Err, inv)
	return &loaded{inv: inv, out: out}, nil
}

// resolveTimeout bounds the resolution of every host name of a run.
const resolveTimeout = 15 * time.Second

// execute runs f with the display decided in l (flow.Run): bad phase names
// and missing secrets are usage errors and nothing runs; a run that started
// returns its summary.
func (o *runOptions) execute(ctx context.Context, s Streams, l *loaded, f flow.Flow) (*engine.Summary, error) {
	sum, err := flow.Run(ctx, l.inv, f, flow.RunOptions{
		Concurrency: o.concurrency, LogDir: o.logDir, Only: o.onlyPhases, Skip: o.skipPhases, DryRun: o.dryRun,
		ReadTimeout: o.readTimeout, WriteTimeout: o.writeTimeout,
		Connect: o.connect, Secrets: osSecrets(s),
		Note: func(n string) { fmt.Fprintf(s.Err, "note: %s\n", n) },
		Display: func(cancel context.CancelFunc) ui.Display {
			return ui.New(l.out, ui.WithTitle(f.Name), ui.WithCancel(cancel), ui.WithVerbose(o.verbose))
		},
	})
	if sum == nil {
		return nil, phaseSelectionError(err)
	}
	return sum, err
}

// phaseSelectionError names the flag an unknown phase came from.
func phaseSelectionError(err error) error {
	var upe *engine.UnknownPhaseError
	if !errors.As(err, &upe) {
		return err
	}
	flag := flagOnlyPhases
	if upe.Skip {
		flag = flagSkipPhases
	}
	return usage(fmt.Errorf("%s %s: unknown phase; valid phases: %s", flag, upe.Name, strings.Join(upe.Valid, ", ")))
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
