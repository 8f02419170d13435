package cli

import (
	"bufio"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/gpukit/gpukit/internal/flow"
	"github.com/gpukit/gpukit/pkg/inventory"
)

func newResetCmd(s Streams) *cobra.Command {
	o := &runOptions{}
	var yes bool
	cmd := &cobra.Command{
		Use:   "reset -i FILE [--hosts NAME,...]",
		Short: "Take hosts out of the cluster and undo gpukit's runtime changes",
		Long: `The named hosts (--hosts; default: every host) leave the cluster and get back what
gpukit changed. Kubernetes: a control plane that stays drains their nodes (within 5
minutes each, as PodDisruptionBudgets allow) and deletes them from the API; then each
host is reset: kubeadm reset, the pod network's leftovers (CNI configuration and
state, its interfaces, the KUBE-/CNI-/FLANNEL iptables rules; the host's own rules
stay), the registry mirror's hosts.toml files, containerd's config.toml as it was
before gpukit. Swarm: a manager that stays demotes the managers that leave, first,
and removes the nodes that left from its list, after; the hosts leave the swarm and
/etc/docker/daemon.json and /etc/nvidia-container-runtime/config.toml get back what
they held; docker restarts only where a file changed. Packages (kubeadm, containerd,
the Docker engine, the NVIDIA stack) stay installed. Asks for confirmation unless
--yes.

Exit code 0 when every host is reset, 3 when some failed, 2 on bad input or when
the reset was not confirmed (nothing changed).`,
		Example: `  gpukit reset -i cluster.yaml --hosts gpu-017 --yes
  gpukit reset -i cluster.yaml --dry-run
  gpukit reset -i cluster.yaml --yes -o json`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.list {
				return o.printPhases(s)
			}
			l, err := o.load(s)
			if err != nil {
				return err
			}
			f, err := flow.NewReset(l.inv, o.hosts)
			if err != nil {
				return usage(err)
			}
			if !o.dryRun && !yes {
				what := "they leave the swarm and docker's configuration goes back to what it was before gpukit"
				if l.inv.Cluster.Spec.Orchestrator == inventory.Kubernetes {
					what = "their nodes are drained and deleted, kubeadm reset runs and containerd's configuration goes back to what it was before gpukit"
				}
				if err := confirm(s, fmt.Sprintf("Reset %d host(s) (%s): %s.", len(f.Hosts), strings.Join(f.Hosts, ", "), what)); err != nil {
					return usage(err)
				}
			}
			sum, err := o.execute(cmd.Context(), s, l, f.Flow)
			if sum == nil {
				return err
			}
			if werr := writeResult(l.out, f.Result(sum, o.dryRun)); werr != nil && err == nil {
				err = werr
			}
			return runError(err)
		},
	}
	o.addFlags(cmd, honours{writes: true, fanOut: true})
	o.phaseFlags(cmd, func(inv *inventory.Inventory) (flow.Flow, error) {
		f, err := flow.NewReset(inv, nil)
		if err != nil {
			return flow.Flow{}, err
		}
		return f.Flow, nil
	})
	o.addHostsFlag(cmd, "hosts to reset (comma-separated inventory names; default: every host)")
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "do not ask for confirmation")
	cmd.Flags().BoolVar(&o.dryRun, "dry-run", false, "show every write as the script that would run; change nothing")
	return cmd
}

// confirm asks on the terminal; without one, it refuses (pass --yes).
func confirm(s Streams, what string) error {
	f, ok := s.In.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return fmt.Errorf("%s\nnot confirmed: no terminal to ask on; pass --yes", what)
	}
	fmt.Fprintf(s.Err, "%s\nContinue? [y/N] ", what)
	line, _ := bufio.NewReader(f).ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return nil
	}
	return fmt.Errorf("not confirmed: nothing changed")
}
