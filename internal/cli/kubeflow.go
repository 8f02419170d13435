package cli

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/gpukit/gpukit/internal/flow"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/kube"
	"github.com/gpukit/gpukit/pkg/kubeflow"
	"github.com/gpukit/gpukit/pkg/ui"
)

func newKubeflowCmd(s Streams) *cobra.Command {
	return group(&cobra.Command{
		Use:   "kubeflow",
		Short: "Deploy the platform and Kubeflow on a Kubernetes cluster",
		Example: `  gpukit kubeflow deploy -i cluster.yaml
  gpukit kubeflow status --context prod`,
	}, newKubeflowDeployCmd(s), newKubeflowStatusCmd(s))
}

type kubeflowOptions struct {
	runOptions
	kube                                            kubeFlags
	manifests, remoteBases, version, credentialsOut string
}

func newKubeflowDeployCmd(s Streams) *cobra.Command {
	o := &kubeflowOptions{}
	cmd := &cobra.Command{
		Use:   "deploy (-i FILE | [--kubeconfig PATH] [--context NAME] [-i FILE])",
		Short: "Deploy storage, Traefik, monitoring, the DCGM exporter and Kubeflow, in one run without a retry loop",
		Long: `Deploy the platform on a running Kubernetes cluster, every step through its API:

  platform/storage      the default StorageClass: local-path, or nfs-subdir-external-provisioner
                        with spec.addons.storage.nfs
  platform/ingress      Traefik, the default IngressClass: on the ingress hosts (else the first
                        control plane) as a DaemonSet on ports 80 and 443; behind the cluster's
                        load balancer with --kubeconfig
  platform/monitoring   kube-prometheus-stack (Prometheus, Grafana, node exporter,
                        kube-state-metrics); Grafana's admin password generated, shown once
                        and written to --credentials-out (mode 0600)
  platform/gpu-metrics  NVIDIA's DCGM exporter on the GPU nodes, with a ServiceMonitor that
                        Prometheus selects
  kubeflow/manifests    Kubeflow (spec.kubeflow.version) built in-process with kustomize and
                        applied server-side (field manager gpukit) in dependency order: CRDs
                        (each waited for until Established), namespaces, the rest, and each
                        webhook configuration once the Deployment behind it is Available.
                        Single objects are retried; the whole never is.

Charts come from their upstream repositories, or spec.mirrors.charts (a Helm repository or a
local directory of archives). Kubeflow's manifests come from the tag's archive on GitHub, or
--manifests (a tarball or directory of the tag's tree); releases whose example references
remote bases (26.03) need --remote-bases offline: every missing one is named at once.

-i FILE reaches the cluster gpukit built through its first control plane's SSH connection;
--kubeconfig PATH and --context NAME reach any cluster from this machine, as kubectl does
(-i then only adds the inventory's spec.addons and spec.kubeflow); without -i the kubeconfig
is $KUBECONFIG's (its files merged), else ~/.kube/config, at its current context. A second
run changes nothing: each release deployed as wanted and a server-side dry-run of Kubeflow
that changes no object are skipped. --dry-run shows the releases with their chart versions
and Kubeflow's objects per kind, and changes nothing.

Exit code 0 when every phase finished, 1 when one failed (named), 2 on bad input.`,
		Example: `  gpukit kubeflow deploy -i cluster.yaml
  gpukit kubeflow deploy --context prod --dry-run
  gpukit kubeflow deploy --kubeconfig ./lab.kubeconfig -i cluster.yaml --version 26.03
  gpukit kubeflow deploy -i cluster.yaml --manifests ./manifests-26.03.tar.gz --remote-bases ./bases.tar.gz`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd, s) },
	}
	o.addFlags(cmd, honours{})
	o.phaseFlags(cmd, func(inv *inventory.Inventory) (flow.Flow, error) {
		f, err := flow.NewKubeflowDeploy(inv, o.flowOptions())
		if err != nil {
			return flow.Flow{}, err
		}
		return f.Flow, nil
	})
	o.kube.addFlags(cmd)
	f := cmd.Flags()
	f.StringVar(&o.manifests, "manifests", "", "Kubeflow's manifests: a tarball (.tar.gz) or directory of the kubeflow/manifests tag (default: download the tag's archive from GitHub)")
	f.StringVar(&o.remoteBases, "remote-bases", "", "the remote bases Kubeflow's example references, laid out by URL: a tarball or directory (air-gapped 26.03)")
	f.StringVar(&o.version, "version", "", "the kubeflow/manifests release, instead of spec.kubeflow.version: "+strings.Join(inventory.KubeflowVersions(), ", "))
	f.StringVar(&o.credentialsOut, "credentials-out", "", "where generated logins are written, mode 0600 (default ./<cluster name>.credentials)")
	f.BoolVar(&o.dryRun, "dry-run", false, "show the releases and Kubeflow's objects per kind that would be applied; change nothing")
	return cmd
}

func (o *kubeflowOptions) run(cmd *cobra.Command, s Streams) error {
	if o.list {
		return o.printPhases(s)
	}
	if o.version != "" && !slices.Contains(inventory.KubeflowVersions(), o.version) {
		return usage(fmt.Errorf("--version %s: gpukit deploys %s", o.version, strings.Join(inventory.KubeflowVersions(), ", ")))
	}
	l, fo, err := o.prepare(s)
	if err != nil {
		return err
	}
	f, err := flow.NewKubeflowDeploy(l.inv, fo)
	if err != nil {
		return usage(err)
	}
	sum, err := o.execute(cmd.Context(), s, l, f.Flow)
	if sum == nil {
		return err
	}
	res := f.Result(sum, o.dryRun)
	if creds := f.Platform.Credentials(); len(creds) > 0 && !o.dryRun {
		path := cmp.Or(o.credentialsOut, f.Cluster+".credentials")
		if werr := writeCredentials(l.out, path, creds); werr != nil && err == nil {
			err = werr
		}
		res.Files.Credentials = path
	}
	if werr := writeResult(l.out, res); werr != nil && err == nil {
		err = werr
	}
	return runError(err)
}

// prepare loads the inventory (when given) and the kubeconfig (when
// chosen, or without an inventory): bad input is a usage error and nothing
// is contacted.
func (o *kubeflowOptions) prepare(s Streams) (*loaded, flow.KubeflowOptions, error) {
	fo := o.flowOptions()
	l := &loaded{}
	var err error
	if o.inventory != "" {
		l, err = o.load(s)
	} else {
		l.out, err = decideOutput(s.Out, o.output)
	}
	if err != nil {
		return nil, fo, err
	}
	raw, cluster, err := o.kube.api(o.inventory)
	if err != nil || raw == nil {
		return l, fo, err
	}
	// The run works from this machine, named after the context's cluster.
	fo.Kubeconfig, fo.APIMachine = raw, kube.ClusterName(cluster)
	return l, fo, nil
}

// flowOptions are the flags the flow takes (the kubeconfig is read by
// prepare).
func (o *kubeflowOptions) flowOptions() flow.KubeflowOptions {
	return flow.KubeflowOptions{Version: o.version, Manifests: o.manifests, RemoteBases: o.remoteBases}
}

func newKubeflowStatusCmd(s Streams) *cobra.Command {
	o := &kubeflowOptions{}
	cmd := &cobra.Command{
		Use:   "status (-i FILE | [--kubeconfig PATH] [--context NAME] [-i FILE])",
		Short: "Show the platform's releases, Kubeflow's readiness and the URLs",
		Long: `Read, through the cluster's API, each platform release (the chart version deployed beside the
one gpukit pins, and Helm's status), the Deployments gpukit applied for Kubeflow (Available of all,
and those that are not), those of the platform gpukit renders itself (the statsd exporter) and the
URLs of the web UIs. Nothing is changed. -o json prints the events, then one object:
{"type":"kubeflow-status","releases":[...],"kubeflow":{...},"platform":{...},"urls":[...]}.
The cluster is reached as kubeflow deploy reaches it: -i FILE, or a kubeconfig
(--kubeconfig, --context, $KUBECONFIG, ~/.kube/config).

Exit code 0 when everything is deployed and Available, 1 when something is not, 2 on bad input.`,
		Example: `  gpukit kubeflow status -i cluster.yaml
  gpukit kubeflow status --context prod -o json
  KUBECONFIG=~/.kube/config:./lab.kubeconfig gpukit kubeflow status --context lab-admin@lab`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.list {
				return o.printPhases(s)
			}
			l, fo, err := o.prepare(s)
			if err != nil {
				return err
			}
			f, err := flow.NewKubeflowStatus(l.inv, fo)
			if err != nil {
				return usage(err)
			}
			sum, err := o.execute(cmd.Context(), s, l, f.Flow)
			res := f.StatusResult()
			if sum == nil || res == nil {
				return runError(err)
			}
			if werr := writeKubeflowStatus(l.out, res); werr != nil {
				return werr
			}
			if !res.Healthy {
				return errors.New("the platform is not healthy: see above")
			}
			return nil
		},
	}
	o.addFlags(cmd, honours{})
	o.phaseFlags(cmd, func(inv *inventory.Inventory) (flow.Flow, error) {
		f, err := flow.NewKubeflowStatus(inv, o.flowOptions())
		if err != nil {
			return flow.Flow{}, err
		}
		return f.Flow, nil
	})
	o.kube.addFlags(cmd)
	return cmd
}

func writeKubeflowStatus(out ui.Output, res *flow.KubeflowStatusResult) error {
	if out.Format == ui.FormatJSON {
		return writeResult(out, res)
	}
	st := res.Status
	w := tabwriter.NewWriter(out.W, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "\nRELEASE\tNAMESPACE\tCHART\tDEPLOYED\tPINNED\tSTATUS")
	for _, r := range st.Releases {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Name, r.Namespace, r.Chart, cmp.Or(r.Deployed, "-"), r.Want, r.Status)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(out.W)
	for _, k := range []struct {
		what string
		d    kubeflow.Deployments
	}{{"Platform", st.Platform}, {"Kubeflow", st.Kubeflow}} {
		if k.d.Deployments == 0 {
			continue
		}
		fmt.Fprintf(out.W, "%s: %d of %d Deployments Available\n", k.what, k.d.Available, k.d.Deployments)
		for _, n := range k.d.NotAvailable {
			fmt.Fprintf(out.W, "  not Available: %s\n", n)
		}
	}
	for _, u := range st.URLs {
		fmt.Fprintf(out.W, "%s\n", u)
	}
	return nil
}

// writeCredentials writes the logins the run generated (mode 0600) and
// shows them once on a terminal. Anywhere else (a CI log, | tee, JSON) the
// output is kept, so it names the file and what it holds, never a password.
func writeCredentials(out ui.Output, path string, creds []kubeflow.Credential) error {
	var b strings.Builder
	for _, c := range creds {
		fmt.Fprintf(&b, "%s\tuser %s\tpassword %s\n", c.What, c.User, c.Password)
	}
	if err := writePrivate(path, []byte(b.String())); err != nil {
		return fmt.Errorf("--credentials-out: %w", err)
	}
	switch {
	case out.Format == ui.FormatJSON:
		return nil // named by the result
	case out.Terminal:
		_, err := fmt.Fprintf(out.W, "Logins written to %s (mode 0600):\n%s", path, b.String())
		return err
	}
	var names []string
	for _, c := range creds {
		names = append(names, c.What)
	}
	_, err := fmt.Fprintf(out.W, "Logins written to %s (mode 0600; shown on a terminal only): %s\n", path, strings.Join(names, ", "))
	return err
}
