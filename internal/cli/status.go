package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/gpukit/gpukit/internal/flow"
	"github.com/gpukit/gpukit/pkg/bootstrap/kubeadm"
	"github.com/gpukit/gpukit/pkg/bootstrap/swarm"
	"github.com/gpukit/gpukit/pkg/ui"
)

func newStatusCmd(s Streams) *cobra.Command {
	o := &runOptions{}
	cmd := &cobra.Command{
		Use:   "status -i FILE",
		Short: "Show the cluster's nodes: roles, readiness, GPUs, labels and versions",
		Long: `Connect to the cluster's control planes (a swarm's managers) and list every node as
the first that answers sees it. Kubernetes: name, roles, readiness (and why not),
kubelet and container runtime versions, allocatable nvidia.com/gpu, taints and the GPU
labels (nvidia.com/..., gpukit.dev/...). Swarm: hostname, role (leader/reachable for
managers), state, availability, engine version, the GPUs it advertises (NVIDIA-GPU
generic resources, by UUID) and its labels. Nothing is changed. -o json prints the
events, then one object: {"type":"kubernetes-status","nodes":[...]} or
{"type":"swarm-status","nodes":[...]}.

Exit code 0 when a control plane (manager) answered, 3 when none did, 2 on bad input.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			l, err := o.load(s)
			if err != nil {
				return err
			}
			f, err := flow.NewStatus(l.inv)
			if err != nil {
				return usage(err)
			}
			sum, err := o.execute(cmd.Context(), s, l, f.Flow)
			if sum == nil {
				return err
			}
			if kn := f.KubeNodes(); kn != nil {
				return writeKubeStatus(l.out, kn)
			}
			nodes := f.Nodes()
			if nodes == nil {
				return runError(err)
			}
			if werr := writeStatus(l.out, nodes); werr != nil {
				return werr
			}
			return nil // a manager answered: the hosts that did not are in the summary
		},
	}
	o.addFlags(cmd.Flags())
	return cmd
}

// writeStatus writes the nodes after the run's own output: one JSON object
// after the events, or a table.
func writeStatus(out ui.Output, nodes []swarm.Node) error {
	if out.Format == ui.FormatJSON {
		return json.NewEncoder(out.W).Encode(struct {
			Type  string       `json:"type"`
			Nodes []swarm.Node `json:"nodes"`
		}{"swarm-status", nodes})
	}
	fmt.Fprintln(out.W)
	return writeNodeTable(out.W, nodes)
}

func writeNodeTable(w io.Writer, nodes []swarm.Node) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tROLE\tSTATE\tAVAILABILITY\tENGINE\tGPUS\tLABELS")
	gpus := 0
	for _, n := range nodes {
		role := n.Role
		if n.Manager != "" {
			role += " (" + n.Manager + ")"
		}
		g := "-"
		if len(n.GPUs) > 0 {
			g = fmt.Sprintf("%d: %s", len(n.GPUs), strings.Join(n.GPUs, ","))
		}
		gpus += len(n.GPUs)
		var labels []string
		for _, k := range slices.Sorted(maps.Keys(n.Labels)) {
			labels = append(labels, k+"="+n.Labels[k])
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", n.Hostname, role, n.State, n.Availability, n.Engine, g, strings.Join(labels, " "))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "%d node(s), %d GPU(s) advertised as %s\n", len(nodes), gpus, swarm.GPUKind)
	return err
}

// writeKubeStatus writes the Kubernetes nodes after the run's own output.
func writeKubeStatus(out ui.Output, nodes []kubeadm.NodeStatus) error {
	if out.Format == ui.FormatJSON {
		return json.NewEncoder(out.W).Encode(struct {
			Type  string               `json:"type"`
			Nodes []kubeadm.NodeStatus `json:"nodes"`
		}{"kubernetes-status", nodes})
	}
	fmt.Fprintln(out.W)
	tw := tabwriter.NewWriter(out.W, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tROLES\tREADY\tKUBELET\tRUNTIME\tGPUS\tTAINTS\tLABELS")
	ready, gpus := 0, 0
	for _, n := range nodes {
		roles := strings.Join(n.Roles, ",")
		if roles == "" {
			roles = "<none>"
		}
		r := n.Ready
		if n.Ready == "True" {
			ready++
		} else if n.Reason != "" {
			r += " (" + n.Reason + ")"
		}
		g := "-"
		if n.GPUs != "" {
			g = n.GPUs
			if v, err := strconv.Atoi(n.GPUs); err == nil {
				gpus += v
			}
		}
		var labels []string
		for _, k := range slices.Sorted(maps.Keys(n.Labels)) {
			labels = append(labels, k+"="+n.Labels[k])
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", n.Name, roles, r, n.Kubelet, n.Runtime, g, strings.Join(n.Taints, ","), strings.Join(labels, " "))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(out.W, "%d node(s), %d Ready, %d allocatable %s\n", len(nodes), ready, gpus, kubeadm.GPUResource)
	return err
}
