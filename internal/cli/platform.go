package cli

import (
	"cmp"
	"errors"

	"github.com/spf13/cobra"

	"github.com/gpukit/gpukit/internal/flow"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/swarmplatform"
	"github.com/gpukit/gpukit/pkg/ui"
)

func newPlatformCmd(s Streams) *cobra.Command {
	return group(&cobra.Command{
		Use:     "platform",
		Short:   "Deploy the platform (ingress, GPU monitoring, training metrics) on the cluster gpukit built",
		Example: `  gpukit platform deploy -i cluster.yaml`,
	}, newPlatformDeployCmd(s), newPlatformStatusCmd(s))
}

type platformOptions struct {
	runOptions
	credentialsOut string
}

func newPlatformDeployCmd(s Streams) *cobra.Command {
	o := &platformOptions{}
	cmd := &cobra.Command{
		Use:   "deploy -i FILE",
		Short: "Deploy Traefik, Prometheus, Grafana with the GPU and training dashboards, and the exporters",
		Long: `Deploy the platform on the cluster gpukit built, as init does after the cluster (spec.addons:
ingress and monitoring are on unless turned off). No Kubeflow: that is gpukit kubeflow deploy,
on Kubernetes.

Swarm: one stack per phase, deployed through the first manager's docker (docker stack deploy),
with the versions of the bill of materials (gpukit version) and the registry mirror's names of
their images:

  platform/ingress           Traefik on every manager's ports 80 and 443 (its swarm provider
                             reads the services from the manager's docker), HTTP sent to HTTPS,
                             a self-signed certificate for *.<domain> (kept while it covers
                             the domain a month more) as every route's default
  platform/monitoring        Prometheus and Grafana on the first manager (their volumes there),
                             node exporter on every node; Grafana's admin password generated
                             once (a swarm secret; written to --credentials-out, mode 0600),
                             its Prometheus data source and gpukit's GPU and training
                             dashboards provisioned, https://grafana.<domain> through Traefik;
                             Prometheus finds the exporters through the swarm's service
                             discovery and labels their samples with node and cluster
  platform/gpu-metrics       NVIDIA's DCGM exporter on every GPU node
  platform/training-metrics  the statsd exporter at statsd-exporter:9125 (UDP or TCP) on the
                             attachable network gpukit-platform, for training jobs to push to

Services use no virtual IP (endpoint_mode dnsrr) and publish ports on their own node, so
nothing depends on IPVS. A stack whose services run as its rendered digest says is left alone:
a second run changes nothing. gpukit reset removes the stacks with the first manager.

Kubernetes: kubeflow deploy's platform phases (storage, Traefik, kube-prometheus-stack, the
DCGM exporter, the statsd exporter, the dashboards, the routes) through the first control
plane's connection.

Exit code 0 when every phase finished, 1 when one failed (named), 2 on bad input.`,
		Example: `  gpukit platform deploy -i cluster.yaml
  gpukit platform deploy -i cluster.yaml --dry-run
  gpukit platform deploy -i cluster.yaml --skip-phases platform/gpu-metrics -o json`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd, s) },
	}
	o.addFlags(cmd, honours{writes: true})
	o.phaseFlags(cmd, func(inv *inventory.Inventory) (flow.Flow, error) {
		f, err := flow.NewPlatformDeploy(inv)
		if err != nil {
			return flow.Flow{}, err
		}
		return f.Flow, nil
	})
	f := cmd.Flags()
	f.StringVar(&o.credentialsOut, "credentials-out", "", "where generated logins are written, mode 0600 (default ./<cluster name>.credentials)")
	f.BoolVar(&o.dryRun, "dry-run", false, "show what each phase would deploy; change nothing")
	return cmd
}

func (o *platformOptions) run(cmd *cobra.Command, s Streams) error {
	if o.list {
		return o.printPhases(s)
	}
	l, err := o.load(s)
	if err != nil {
		return err
	}
	f, err := flow.NewPlatformDeploy(l.inv)
	if err != nil {
		return usage(err)
	}
	sum, err := o.execute(cmd.Context(), s, l, f.Flow)
	if sum == nil {
		return err
	}
	res := f.Result(sum, o.dryRun)
	if f.Swarm != nil {
		res.URLs = swarmplatform.SiteOf(l.inv).URLs()
	}
	if creds := f.Credentials(); len(creds) > 0 && !o.dryRun {
		path := cmp.Or(o.credentialsOut, l.inv.Cluster.Metadata.Name+".credentials")
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

func newPlatformStatusCmd(s Streams) *cobra.Command {
	o := &platformOptions{}
	cmd := &cobra.Command{
		Use:   "status -i FILE",
		Short: "Show the platform's services and URLs",
		Long: `Read the platform gpukit deployed; nothing is changed. Swarm: each service of the platform's
stacks with its tasks running of those it wants, through the first manager's docker, and the
URLs. Kubernetes: what kubeflow status shows (the releases, the Deployments, the URLs).
-o json prints the events, then one object: {"type":"platform-status","healthy":...,
"swarm":{"services":[...],"urls":[...]}} (or "kubernetes": kubeflow status's).

Exit code 0 when every service runs every task it wants, 1 when one does not, 2 on bad input.`,
		Example: `  gpukit platform status -i cluster.yaml
  gpukit platform status -i cluster.yaml -o json`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.list {
				return o.printPhases(s)
			}
			l, err := o.load(s)
			if err != nil {
				return err
			}
			f, err := flow.NewPlatformStatus(l.inv)
			if err != nil {
				return usage(err)
			}
			sum, err := o.execute(cmd.Context(), s, l, f.Flow)
			res := f.StatusResult()
			if sum == nil || res == nil {
				return runError(err)
			}
			if werr := writePlatformStatus(l.out, res); werr != nil {
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
		f, err := flow.NewPlatformStatus(inv)
		if err != nil {
			return flow.Flow{}, err
		}
		return f.Flow, nil
	})
	return cmd
}

// writePlatformStatus is the swarm's services and URLs, or kubeflow
// status's tables on Kubernetes; one JSON object with -o json.
func writePlatformStatus(out ui.Output, res *flow.PlatformStatusResult) error {
	if out.Format == ui.FormatJSON {
		return writeResult(out, res)
	}
	if res.Kubernetes != nil {
		return writeKubeflowStatus(out, &flow.KubeflowStatusResult{Header: flow.NewHeader(flow.KindKubeflowStatus), Healthy: res.Healthy, Status: res.Kubernetes})
	}
	return writePlatformTable(out.W, res.Swarm)
}
