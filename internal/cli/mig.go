package cli

import (
	"github.com/spf13/cobra"

	"github.com/gpukit/gpukit/internal/flow"
	"github.com/gpukit/gpukit/pkg/inventory"
)

func newMIGCmd(s Streams) *cobra.Command {
	return group(&cobra.Command{
		Use:     "mig",
		Short:   "Partition the GPUs of a running cluster (Multi-Instance GPU)",
		Example: "  gpukit mig apply -i cluster.yaml --max-unavailable 2 --dry-run",
	}, newMIGApplyCmd(s))
}

const migApplyLong = `Apply the inventory's MIG layouts (spec.nvidia.mig, and a host's own mig) to the GPU nodes
of a running Kubernetes cluster or Docker Swarm, a wave at a time, as gpukit upgrade driver
rolls a driver: never more than --max-unavailable GPU nodes out of service; each node
cordoned, its training asked to checkpoint and waited for (never evicted unless --force),
drained; then its GPUs' MIG mode set (a GPU reset where the mode waits for one, the
persistence daemon, fabric manager and DCGM stopped around it), the GPU instances destroyed
and created as the layout says, gpukit-mig.service installed to make them again at every
boot; nvidia-smi verifies; the device plugin restarted, the node waited for until Ready,
uncordoned. A node whose GPUs already hold their layout is left alone: a second run changes
nothing. A layout a GPU cannot hold is refused before any node is touched (--dry-run shows
it). The rollout's state is in ~/.gpukit/upgrades/<cluster>.mig.json (--state); --resume goes
on after Ctrl-C or a failure, with the same layouts.

Exit code 0 when every node is done, 3 when some failed or were left alone, 2 on bad input.`

func newMIGApplyCmd(s Streams) *cobra.Command {
	o := &upgradeOptions{mig: true}
	cmd := &cobra.Command{
		Use:   "apply -i FILE",
		Short: "Rolling, drain-aware, training-safe MIG layout change on the GPU nodes",
		Long:  migApplyLong,
		Example: `  gpukit mig apply -i cluster.yaml --dry-run
  gpukit mig apply -i cluster.yaml --hosts gpu-001,gpu-002 --wait-for-jobs 2h
  gpukit mig apply -i cluster.yaml --resume`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd, s) },
	}
	f := cmd.Flags()
	o.runOptions.addFlags(cmd, honours{writes: true, fanOut: true})
	o.addRebootFlags(f)
	f.BoolVar(&o.dryRun, "dry-run", false, "show the order of the nodes and each node's steps and scripts; change nothing")
	o.addRolloutFlags(cmd, "change")
	o.phaseFlags(cmd, func(inv *inventory.Inventory) (flow.Flow, error) {
		f, err := flow.NewMIGApply(inv, flow.UpgradeOptions{NVIDIA: o.nvidiaOptions()})
		if err != nil {
			return flow.Flow{}, err
		}
		return f.Flow, nil
	})
	return cmd
}
