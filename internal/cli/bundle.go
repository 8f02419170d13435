package cli

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/gpukit/gpukit/internal/flow"
	"github.com/gpukit/gpukit/pkg/bundle"
	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/ui"
)

func newBundleCmd(s Streams) *cobra.Command {
	return group(&cobra.Command{
		Use:   "bundle",
		Short: "What an air-gapped site needs for an inventory: OS packages, charts, Kubeflow's manifests, images",
		Example: `  gpukit bundle list -i cluster.yaml
  gpukit bundle list -i cluster.yaml -o json`,
	}, newBundleListCmd(s))
}

// errUnknownArtifacts: the list is printed, but some artifacts could not be
// named (hosts that did not answer, charts that could not be loaded).
var errUnknownArtifacts = errors.New("some artifacts could not be named")

func newBundleListCmd(s Streams) *cobra.Command {
	o := &runOptions{}
	cmd := &cobra.Command{
		Use:   "list -i FILE",
		Short: "List every artifact the inventory implies, from the bill of materials and the hosts' facts",
		Long: `Connect to every host (one SSH connection each, host keys verified), read its facts in one
round trip, and list everything init, add-node and kubeflow deploy would fetch for this
inventory, so that an air-gapped site can mirror or bundle it. Nothing is changed on any host.

  packages        per OS family and package source, as the NVIDIA layer and the orchestrator's
                  install them: the driver, fabric manager, persistence daemon, CUDA toolkit,
                  container toolkit, the kernel headers of each host's running kernel and the
                  DKMS build tools, kubeadm/kubelet/kubectl and containerd (or Docker), at the
                  versions pinned; their dependencies are resolved when the bundle is made
  charts          every Helm release's chart at its pinned version (CNI, device plugin, storage,
                  Traefik, monitoring, DCGM exporter), from its repository or spec.mirrors.charts
  kubeflow        the release's manifests and the remote bases its example reaches
  images          kubeadm's (the bill of materials' kubeadmImages), every chart's (rendered
                  with the inventory's values), the statsd exporter's, Kubeflow's (built in-process)

A host that does not answer is listed as unknown (its OS family, kernel and GPUs decide its
packages), as is a chart that cannot be loaded. Exit code 0 when every artifact is named,
1 when some are unknown (the list is still printed), 2 on bad input.`,
		Example: `  gpukit bundle list -i cluster.yaml
  gpukit bundle list -i cluster.yaml -o json | tail -n 1 | jq '.artifacts[] | select(.kind == "image") | .name'`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.list {
				return o.printPhases(s)
			}
			l, err := o.load(s)
			if err != nil {
				return err
			}
			sum, err := o.execute(cmd.Context(), s, l, flow.NewBundleList(l.inv))
			if sum == nil {
				return err
			}
			// Kubeflow's build warnings are kustomize's about its manifests,
			// not about the list: dropped.
			list, err := bundle.Compute(cmd.Context(), l.inv, bundleHosts(l.inv, sum), nil)
			if err != nil {
				return err
			}
			if err := writeBundleList(l.out, list); err != nil {
				return err
			}
			if n := len(list.Unknown()); n > 0 {
				return fmt.Errorf("%w: %d (listed under unknown)", errUnknownArtifacts, n)
			}
			return nil
		},
	}
	o.addFlags(cmd, honours{fanOut: true})
	o.phaseFlags(cmd, func(inv *inventory.Inventory) (flow.Flow, error) { return flow.NewBundleList(inv), nil })
	return cmd
}

// bundleHosts are the inventory's hosts with the facts the run read (none
// for a host that did not answer, with its error).
func bundleHosts(inv *inventory.Inventory, sum *engine.Summary) []bundle.Host {
	res := map[string]engine.HostResult{}
	for _, h := range sum.Hosts {
		res[h.Host] = h
	}
	var out []bundle.Host
	for _, m := range inv.Machines {
		r := res[m.Name]
		out = append(out, bundle.Host{Machine: m, Facts: r.Facts, Err: r.Err})
	}
	return out
}

// bundleListResult is `gpukit bundle list`'s final object. It is the one
// result typed here rather than in internal/flow: pkg/bundle reads every
// layer's decisions, and the flows importing it would lengthen the longest
// import chain (test/imports).
type bundleListResult struct {
	flow.Header
	*bundle.List
}

// writeBundleList writes the list after the run's events: one JSON object
// (-o json), else the list in words.
func writeBundleList(out ui.Output, l *bundle.List) error {
	if out.Format == ui.FormatJSON {
		return writeResult(out, &bundleListResult{Header: flow.NewHeader(flow.KindBundleList), List: l})
	}
	fmt.Fprintln(out.W)
	return bundle.WriteText(out.W, l)
}
