package cli

import (
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/gpukit/gpukit/internal/flow"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/ui"
	"github.com/gpukit/gpukit/pkg/verify"
)

func newVerifyCmd(s Streams) *cobra.Command {
	o := &runOptions{}
	var k kubeFlags
	var (
		level       int
		nccl        bool
		minBusBW    float64
		taintFailed bool
	)
	cmd := &cobra.Command{
		Use:   "verify -i FILE",
		Short: "Acceptance-test the GPU nodes: DCGM diagnostics and NCCL bandwidth",
		Long: `Run each GPU node's acceptance tests on the host: NVIDIA DCGM's diagnostic
(dcgmi diag -r LEVEL: 1 quick, about a minute; 2 medium, a few; 3 long, about half an hour),
and NCCL's all-reduce bandwidth across the node's GPUs (nccl-tests' all_reduce_perf, from
PATH, /usr/local/bin or /opt/nccl-tests/build), judged against the bus bandwidth the bill of
materials expects of the GPU model and count (gpukit version; --min-busbw replaces it). A test
that cannot run (no DCGM or nccl-tests on the host, one GPU, one node) is reported as not
run, with why, never as passed. The test across nodes needs an MPI launcher between them and
is not run yet.

Run it after init, add-node or upgrade driver, or alone, with the nodes' workloads drained:
the tests load the GPUs. Nothing is installed or configured; --taint-failed (Kubernetes)
taints each failed node gpukit.dev/acceptance=failed:NoSchedule. --dry-run runs no test and
says which would run.

Exit code 0 when every test ran and passed, 3 when a node failed (named) or a test did not
run, 2 on bad input. -o json ends with {"type":"verify","nodes":[...]}.`,
		Example: `  gpukit verify -i cluster.yaml
  gpukit verify -i cluster.yaml --level 3 --hosts gpu-001 --taint-failed
  gpukit verify -i cluster.yaml --level 0 --min-busbw 400 -o json`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.list {
				return o.printPhases(s)
			}
			switch {
			case level < 0 || level > 3:
				return usage(fmt.Errorf("--level %d: want 0 (none), 1, 2 or 3", level))
			case minBusBW < 0:
				return usage(fmt.Errorf("--min-busbw %g: want GB/s, 0 for the bill's", minBusBW))
			case level == 0 && !nccl:
				return usage(errors.New("--level 0 and --nccl=false: no test to run"))
			}
			l, err := o.load(s)
			if err != nil {
				return err
			}
			kc, _, err := k.api(o.inventory)
			if err != nil {
				return err
			}
			f, err := flow.NewVerify(l.inv, flow.VerifyOptions{Verify: verify.Options{Level: level, NCCL: nccl, MinNodeBusBW: minBusBW},
				TaintFailed: taintFailed, Kubeconfig: kc, Hosts: o.hosts})
			if err != nil {
				return usage(err)
			}
			sum, runErr := o.execute(cmd.Context(), s, l, f.Flow)
			if sum == nil {
				return runErr
			}
			r := f.Result(sum, o.dryRun)
			if err := writeVerify(l.out, r); err != nil {
				return err
			}
			if runErr == nil && !r.Passed && !r.DryRun && len(r.NotRun) > 0 {
				return &hostsFailedError{err: fmt.Errorf("not every test ran: %s", strings.Join(r.NotRun, "; "))}
			}
			return runError(runErr)
		},
	}
	o.addFlags(cmd, honours{fanOut: true, writes: true})
	f := cmd.Flags()
	f.BoolVar(&o.dryRun, "dry-run", false, "run no test; say which would run where")
	f.IntVar(&level, "level", 1, "DCGM diagnostic level: 1, 2, 3, or 0 for none")
	f.BoolVar(&nccl, "nccl", true, "measure NCCL all-reduce bandwidth across each node's GPUs")
	f.Float64Var(&minBusBW, "min-busbw", 0, "the lowest all-reduce bus bandwidth a node must reach, GB/s (default: the bill's, by GPU model)")
	f.BoolVar(&taintFailed, "taint-failed", false, "taint failed nodes "+verify.TaintKey+"=failed:NoSchedule (Kubernetes)")
	o.addHostsFlag(cmd, "verify only these hosts (comma-separated inventory names)")
	k.addFlags(cmd)
	o.phaseFlags(cmd, func(inv *inventory.Inventory) (flow.Flow, error) {
		f, err := flow.NewVerify(inv, flow.VerifyOptions{Verify: verify.Options{Level: 1, NCCL: true}})
		if err != nil {
			return flow.Flow{}, err
		}
		return f.Flow, nil
	})
	return cmd
}

// writeVerify writes each node's tests, then what did not run.
func writeVerify(out ui.Output, r *flow.VerifyResult) error {
	if out.Format == ui.FormatJSON {
		return writeResult(out, r)
	}
	fmt.Fprintln(out.W)
	tw := tabwriter.NewWriter(out.W, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "HOST\tGPUS\tDCGM\tNCCL BUSBW GB/s (MIN)\tNCCL\tTAINTED")
	for _, n := range r.Nodes {
		bw := "-"
		if n.NCCL.BusBW > 0 {
			bw = fmt.Sprintf("%.1f", n.NCCL.BusBW)
			if n.NCCL.Threshold > 0 {
				bw += fmt.Sprintf(" (%.0f)", n.NCCL.Threshold)
			}
		}
		tainted := ""
		if n.Tainted {
			tainted = "yes"
		}
		fmt.Fprintf(tw, "%s\t%d x %s\t%s\t%s\t%s\t%s\n", n.Host, n.GPUs, n.GPU, n.DCGM.Status, bw, n.NCCL.Status, tainted)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, n := range r.Nodes {
		for _, t := range []struct {
			what string
			test verify.Test
		}{{"DCGM", n.DCGM}, {"NCCL", n.NCCL}} {
			if t.test.Status != "passed" && len(t.test.Detail) > 0 {
				fmt.Fprintf(out.W, "%s %s %s: %s\n", n.Host, t.what, t.test.Status, strings.Join(t.test.Detail, "; "))
			}
		}
	}
	fmt.Fprintf(out.W, "across nodes: %s (%s)\n", r.Cluster.Status, strings.Join(r.Cluster.Detail, "; "))
	switch {
	case r.DryRun:
		fmt.Fprintln(out.W, "dry-run: no test ran")
	case r.Passed:
		fmt.Fprintln(out.W, "every test ran and passed")
	case len(r.Failed) > 0:
		fmt.Fprintf(out.W, "failed: %s\n", strings.Join(r.Failed, ", "))
	}
	return nil
}
