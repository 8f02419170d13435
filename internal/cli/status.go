package cli

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/gpukit/gpukit/internal/flow"
	"github.com/gpukit/gpukit/pkg/dcgm"
	"github.com/gpukit/gpukit/pkg/facts"
	"github.com/gpukit/gpukit/pkg/gpuhealth"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/kube"
	"github.com/gpukit/gpukit/pkg/swarmapi"
	"github.com/gpukit/gpukit/pkg/swarmplatform"
	"github.com/gpukit/gpukit/pkg/ui"
)

func newStatusCmd(s Streams) *cobra.Command {
	o := &runOptions{}
	var k kubeFlags
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

Every host also shows its GPUs (nvidia-smi -q -x, and the kernel's XID reports of this
boot): product, driver and CUDA, temperature against its slowdown threshold, power
against its limit, MIG mode, uncorrectable ECC errors, remapped rows, each GPU's verdict
(ok, warn, fail) and what to do about it. -o json adds "gpus":[...] and "healthy".
Kubernetes: where DCGM exporters run (gpukit's monitoring, or the GPU Operator's), each
node's is read through the API server's pod proxy: utilization, the pods using each GPU
(and MIG instance), and its XID, row remapping and double-bit ECC counters join the
verdicts.

--hosts reads the GPUs of the named hosts only; the nodes are listed whole. The API is
reached through the first control plane, or from this machine with --kubeconfig or
--context (a kubeconfig as kubectl reads it: $KUBECONFIG's files, else ~/.kube/config).

Exit code 0 when everything is healthy, 3 when a host did not answer, a node is not
Ready or a GPU fails its health check (each named), 2 on bad input.`,
		Example: `  gpukit status -i cluster.yaml
  gpukit status -i cluster.yaml --hosts gpu-001,gpu-002
  gpukit status -i cluster.yaml --context lab-admin@lab -o json`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.list {
				return o.printPhases(s)
			}
			l, err := o.load(s)
			if err != nil {
				return err
			}
			if k.chosen() && l.inv.Cluster.Spec.Orchestrator == inventory.Swarm {
				return usage(fmt.Errorf("%s: spec.orchestrator is swarm: a swarm has no API server; its managers are asked over SSH", k.flag()))
			}
			kc, _, err := k.api(o.inventory)
			if err != nil {
				return err
			}
			f, err := flow.NewStatus(l.inv, flow.StatusOptions{Hosts: o.hosts, Kubeconfig: kc})
			if err != nil {
				return usage(err)
			}
			sum, err := o.execute(cmd.Context(), s, l, f.Flow)
			if sum == nil {
				return err
			}
			switch r := f.Result(sum).(type) {
			case *flow.KubernetesStatus:
				for _, u := range r.Unanswered {
					fmt.Fprintf(s.Err, "warning: the DCGM exporter on %s did not answer\n", u)
				}
				if werr := writeKubeStatus(l.out, r); werr != nil {
					return werr
				}
				return unhealthy(r.Problems)
			case *flow.SwarmStatus:
				if werr := writeStatus(l.out, r); werr != nil {
					return werr
				}
				return unhealthy(r.Problems)
			}
			return runError(err)
		},
	}
	o.addFlags(cmd, honours{fanOut: true})
	o.addHostsFlag(cmd, "read the GPUs of these hosts only (comma-separated inventory names; default: every host)")
	k.addFlags(cmd)
	o.phaseFlags(cmd, func(inv *inventory.Inventory) (flow.Flow, error) {
		f, err := flow.NewStatus(inv, flow.StatusOptions{})
		if err != nil {
			return flow.Flow{}, err
		}
		return f.Flow, nil
	})
	return cmd
}

// unhealthy is status's error for what is wrong, nil when nothing is.
func unhealthy(problems []string) error {
	if len(problems) == 0 {
		return nil
	}
	return &hostsFailedError{err: fmt.Errorf("unhealthy: %s", strings.Join(problems, "; "))}
}

// writeStatus writes the nodes after the run's own output: one JSON object
// after the events, or a table.
func writeStatus(out ui.Output, r *flow.SwarmStatus) error {
	if out.Format == ui.FormatJSON {
		return writeResult(out, r)
	}
	nodes, gpus := r.Nodes, r.GPUs
	fmt.Fprintln(out.W)
	if err := writeNodeTable(out.W, nodes); err != nil {
		return err
	}
	if err := writeGPUTable(out.W, gpus); err != nil {
		return err
	}
	return writePlatformTable(out.W, r.Platform)
}

// writePlatformTable is the swarm platform's services, then its URLs.
func writePlatformTable(w io.Writer, p *swarmplatform.Status) error {
	if p == nil || len(p.Services)+len(p.Missing) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	for _, m := range p.Missing {
		fmt.Fprintf(w, "platform stack %s: not deployed (gpukit platform deploy)\n", m)
	}
	if len(p.Services) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PLATFORM SERVICE	TASKS	RUNNING")
	for _, s := range p.Services {
		fmt.Fprintf(tw, "%s	%s	%s\n", s.Name, s.Replicas, showBool(&s.Running))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, u := range p.URLs {
		fmt.Fprintln(w, u)
	}
	return nil
}

// writeGPUTable is one line per GPU, its reasons below it.
func writeGPUTable(w io.Writer, hosts []gpuhealth.HostGPUs) error {
	if len(hosts) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "HOST\tGPU\tPRODUCT\tDRIVER\tCUDA\tTEMP C (SLOWDOWN)\tPOWER W (LIMIT)\tUTIL %\tMIG\tECC UNCORR\tREMAP PENDING\tXIDS\tHEALTH")
	count := map[string]int{}
	var notes []string
	for _, h := range hosts {
		if h.Error != "" {
			fmt.Fprintf(tw, "%s\t-\t-\t-\t-\t-\t-\t-\t-\t-\t-\t%s\t%s\n", h.Host, xidCodes(h.XIDs), h.Status)
			notes = append(notes, fmt.Sprintf("  %s: nvidia-smi: %s", h.Host, h.Error))
			count[h.Status]++
			continue
		}
		for _, g := range h.GPUs {
			st := g.Health.Status()
			count[st]++
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s (%s)\t%s (%s)\t%s\t%s\t%s\t%s\t%s\t%s\n", h.Host, g.BusID, g.ProductName, h.Driver, h.CUDA,
				showInt(g.TemperatureC), showInt(g.SlowdownTempC), showFloat(g.PowerDrawW), showFloat(g.PowerLimitW), utilization(g.DCGM),
				dash(g.MIGMode.Current), showInt(g.ECC.Volatile.Uncorrected), showBool(g.RemappedRows.Pending), ints(g.XIDs), st)
			for _, r := range g.Health.Reasons() {
				notes = append(notes, fmt.Sprintf("  %s %s: %s", h.Host, g.BusID, r))
			}
			for _, d := range g.DCGM {
				if len(d.Pods) > 0 {
					notes = append(notes, fmt.Sprintf("  %s %s%s: used by %s (dcgm-exporter)", h.Host, g.BusID, migSuffix(d.MIG), strings.Join(d.Pods, ", ")))
				}
			}
		}
		for _, d := range h.DCGM {
			notes = append(notes, fmt.Sprintf("  %s: dcgm-exporter reports GPU %s (%s) that nvidia-smi did not list", h.Host, d.Index, dash(d.UUID)))
		}
		for _, x := range h.XIDs {
			notes = append(notes, fmt.Sprintf("  %s: XID %d on %s (no GPU of the report): %s", h.Host, x.Code, x.Bus, x.Message))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, n := range notes {
		fmt.Fprintln(w, n)
	}
	_, err := fmt.Fprintf(w, "%d GPU host(s): %d ok, %d warn, %d fail\n", len(hosts), count[facts.HealthOK], count[facts.HealthWarn], count[facts.HealthFail])
	return err
}

// utilization is dcgm-exporter's GPU utilization of the whole GPU, "-"
// without the exporter.
func utilization(readings []dcgm.GPU) string {
	for _, d := range readings {
		if v, ok := d.Value(dcgm.FieldUtil); ok && d.MIG == "" {
			return strconv.FormatFloat(v, 'f', 0, 64)
		}
	}
	return "-"
}

func migSuffix(mig string) string {
	if mig == "" {
		return ""
	}
	return " MIG " + mig
}

func showInt(v *int64) string {
	if v == nil {
		return "-"
	}
	return strconv.FormatInt(*v, 10)
}

func showFloat(v *float64) string {
	if v == nil {
		return "-"
	}
	return strconv.FormatFloat(*v, 'f', 0, 64)
}

func showBool(v *bool) string {
	switch {
	case v == nil:
		return "-"
	case *v:
		return "yes"
	}
	return "no"
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func ints(v []int) string {
	if len(v) == 0 {
		return "-"
	}
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}

func xidCodes(xs []gpuhealth.XID) string {
	codes := make([]int, len(xs))
	for i, x := range xs {
		codes[i] = x.Code
	}
	return ints(codes)
}

func writeNodeTable(w io.Writer, nodes []swarmapi.Node) error {
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
	_, err := fmt.Fprintf(w, "%d node(s), %d GPU(s) advertised as %s\n", len(nodes), gpus, swarmapi.GPUKind)
	return err
}

// writeKubeStatus writes the Kubernetes nodes after the run's own output.
func writeKubeStatus(out ui.Output, r *flow.KubernetesStatus) error {
	if out.Format == ui.FormatJSON {
		return writeResult(out, r)
	}
	nodes, gpus := r.Nodes, r.GPUs
	fmt.Fprintln(out.W)
	tw := tabwriter.NewWriter(out.W, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tROLES\tREADY\tKUBELET\tRUNTIME\tGPUS\tTAINTS\tLABELS")
	ready, schedulable := 0, 0
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
			if v, err := strconv.Atoi(n.GPUs); err == nil && !n.Unschedulable {
				schedulable += v
			}
		}
		// MIG devices and shared GPUs, as the device plugin advertises them.
		for _, k := range slices.Sorted(maps.Keys(n.Resources)) {
			if g == "-" {
				g = ""
			} else {
				g += " "
			}
			g += strings.TrimPrefix(k, "nvidia.com/") + ":" + n.Resources[k]
		}
		if n.Unschedulable && g != "-" {
			g += " (cordoned)"
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
	if _, err := fmt.Fprintf(out.W, "%d node(s), %d Ready, %d schedulable %s\n", len(nodes), ready, schedulable, kube.GPUResource); err != nil {
		return err
	}
	return writeGPUTable(out.W, gpus)
}
