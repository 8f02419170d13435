package cli

import (
	"github.com/spf13/cobra"

	"github.com/gpukit/gpukit/internal/flow"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/nvidia"
)

func newAddNodeCmd(s Streams) *cobra.Command {
	o := &initOptions{}
	cmd := &cobra.Command{
		Use:   "add-node -i FILE NAME...",
		Short: "Prepare new hosts of the inventory and join them to the cluster",
		Long: `Prepare the named hosts as init prepares every host (preflight, the NVIDIA stack,
then for Kubernetes the kubelet's prerequisites, kubeadm, kubelet, kubectl and containerd
with the NVIDIA runtime; for a swarm the Docker engine with the NVIDIA runtime and the
GPUs advertised) and join them through the first control plane (a join token made for
the run, valid for minutes; new control planes join as control planes, one at a time)
or the swarm's first manager, which then labels their nodes. The hosts must be in the
inventory already. The run connects to them and to that host only: no other host is
touched.

Exit code 0 when every new host joined, 3 when some failed (named; run again to
continue), 2 on bad input (nothing changed on any host).`,
		Example: `  gpukit add-node -i cluster.yaml gpu-017
  gpukit add-node -i cluster.yaml gpu-017 gpu-018 --dry-run
  gpukit add-node -i cluster.yaml cp-4 --max-parallel-reboots 1`,
		Args: func(cmd *cobra.Command, args []string) error {
			return usage(cobra.MinimumNArgs(1)(cmd, args))
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.list {
				return o.printPhases(s)
			}
			if err := o.checkFlags(); err != nil {
				return err
			}
			l, err := o.load(s)
			if err != nil {
				return err
			}
			f, err := flow.NewAddNode(l.inv, args, flow.InitOptions{NVIDIA: o.nvidiaOptions()})
			if err != nil {
				return usage(err)
			}
			res, err := o.executeAfterPreflight(cmd.Context(), s, l, f.Preflight, true)
			if res == nil {
				return err
			}
			if werr := writeResult(l.out, res); werr != nil && err == nil {
				err = werr
			}
			return err
		},
	}
	o.runOptions.addFlags(cmd, honours{writes: true, fanOut: true})
	o.addVersionFlags(cmd.Flags())
	o.addRebootFlags(cmd.Flags())
	o.phaseFlags(cmd, func(inv *inventory.Inventory) (flow.Flow, error) {
		// The phases are the same whichever hosts join: list them for the
		// inventory's last host.
		f, err := flow.NewAddNode(inv, []string{inv.Machines[len(inv.Machines)-1].Name}, flow.InitOptions{NVIDIA: o.nvidiaOptions()})
		if err != nil {
			return flow.Flow{}, err
		}
		return f.Flow, nil
	})
	cmd.Flags().BoolVar(&o.dryRun, "dry-run", false, "probe the hosts and show every write as the script that would run; change nothing")
	return cmd
}

// nvidiaOptions are the NVIDIA layer's flags.
func (o *initOptions) nvidiaOptions() nvidia.Options {
	return nvidia.Options{MaxParallelReboots: o.maxParallelReboots, RebootTimeout: o.rebootTimeout}
}
