package cli

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/gpukit/gpukit/pkg/engine"
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

Exit code 0 when every host passes (warnings allowed), 3 when some hosts fail a check or
cannot be reached, 2 on bad input.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			var pf *preflight.Preflight
			_, sum, err := runPhases(cmd.Context(), s, o, "gpukit preflight", func(inv *inventory.Inventory) []engine.Phase {
				pf = preflight.New(inv)
				return pf.Phases()
			})
			if sum == nil {
				return err
			}
			rep := pf.Report(sum)
			if o.output == "json" {
				if werr := preflight.WriteJSON(s.Out, rep); werr != nil {
					return werr
				}
			} else {
				color := false
				if f, ok := s.Out.(*os.File); ok {
					color = ui.IsTerminal(f) && os.Getenv("NO_COLOR") == ""
				}
				fmt.Fprintln(s.Out)
				if werr := preflight.WriteText(s.Out, rep, preflight.TextOptions{Color: color, Verbose: o.verbose}); werr != nil {
					return werr
				}
			}
			return runError(err)
		},
	}
	o.addFlags(cmd.Flags())
	return cmd
}
