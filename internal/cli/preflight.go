package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/gpukit/gpukit/internal/flow"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/preflight"
	"github.com/gpukit/gpukit/pkg/ui"
)

func newPreflightCmd(s Streams) *cobra.Command {
	o := &runOptions{}
	cmd := &cobra.Command{
		Use:   "preflight -i FILE",
		Short: "Check that every host is ready: OS, hardware, GPUs, Secure Boot, runtimes, ports",
		Long: `Connect to every host (one SSH connection each, host keys verified), gather its
facts in one round trip and check them: OS and kernel, CPUs, memory, disk, swap, NVIDIA
GPUs on the PCI bus and nvidia-smi (driver, MIG mode), nouveau, Secure Boot, container
runtimes, time sync, free ports, and hostnames / product_uuid / machine-id unique across
hosts. Nothing is changed on any host.

--hosts checks only the named hosts (the uniqueness checks compare those).

Exit code 0 when every host passes (warnings allowed), 3 when some hosts fail a check or
cannot be reached, 2 on bad input.`,
		Example: `  gpukit preflight -i cluster.yaml
  gpukit preflight -i cluster.yaml --hosts gpu-001,gpu-002 -v
  gpukit preflight -i cluster.yaml --accept-new-host-keys -o json`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.list {
				return o.printPhases(s)
			}
			l, err := o.load(s)
			if err != nil {
				return err
			}
			f, err := flow.NewPreflight(l.inv, o.hosts)
			if err != nil {
				return usage(err)
			}
			sum, err := o.execute(cmd.Context(), s, l, f.Flow)
			if sum == nil {
				return err
			}
			if werr := writePreflightReport(l.out, f.Report(sum), o.verbose); werr != nil {
				return werr
			}
			return runError(err)
		},
	}
	o.addFlags(cmd, honours{fanOut: true})
	o.addHostsFlag(cmd, "check only these hosts (comma-separated inventory names; default: every host)")
	o.phaseFlags(cmd, func(inv *inventory.Inventory) (flow.Flow, error) {
		f, err := flow.NewPreflight(inv, nil)
		if err != nil {
			return flow.Flow{}, err
		}
		return f.Flow, nil
	})
	return cmd
}

// writePreflightReport writes the report after the run's own output: one
// JSON object after the events, or the table and findings.
func writePreflightReport(out ui.Output, rep preflight.Report, verbose bool) error {
	if out.Format == ui.FormatJSON {
		return preflight.WriteJSON(out.W, rep)
	}
	fmt.Fprintln(out.W)
	return preflight.WriteText(out.W, rep, preflight.TextOptions{Color: out.Color(), Verbose: verbose})
}
