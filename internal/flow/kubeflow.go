package flow

import (
	"cmp"
	"fmt"
	"os"

	"github.com/gpukit/gpukit/pkg/bootstrap/kubeadm"
	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/kube"
	"github.com/gpukit/gpukit/pkg/kubeflow"
)

// KubeflowOptions are `gpukit kubeflow deploy`'s choices that are not in
// the inventory.
type KubeflowOptions struct {
	// Version is the kubeflow/manifests release (--version); "" for the
	// inventory's spec.kubeflow.version.
	Version string
	// Manifests and RemoteBases: where Kubeflow's manifests come from
	// (--manifests, --remote-bases).
	Manifests, RemoteBases string
	// Kubeconfig reaches the cluster from this machine (--kubeconfig,
	// --context, $KUBECONFIG): the run works through the API only.
	Kubeconfig []byte
	// APIMachine names this machine in the run's events and logs when
	// Kubeconfig is set (the kubeconfig's cluster).
	APIMachine string
}

// KubeflowDeploy is `gpukit kubeflow deploy`: the platform on a running
// cluster, every phase through its API - from the first control plane's
// connection on a cluster gpukit built, or from this machine with a
// kubeconfig. Nothing runs on the hosts.
type KubeflowDeploy struct {
	Flow
	Platform *kubeflow.Platform
	// Cluster is the cluster's name (the inventory's, else the
	// kubeconfig's cluster): it names the files the command writes.
	Cluster string
}

// NewKubeflowDeploy builds the flow for the cluster of inv, or for the
// cluster of o.Kubeconfig with every addon's defaults when inv is nil.
func NewKubeflowDeploy(inv *inventory.Inventory, o KubeflowOptions) (*KubeflowDeploy, error) {
	if err := CheckKubeflowSources(inv, o); err != nil {
		return nil, err
	}
	k, err := platform(inv, o)
	if err != nil {
		return nil, err
	}
	k.Name = "gpukit kubeflow deploy"
	// storage, ingress, monitoring, GPU and training metrics, dashboards,
	// Kubeflow, routes: `gpukit kubeflow deploy --list-phases` prints them
	// as Platform.Phases builds them.
	k.Phases = k.Platform.Phases()
	return k, nil
}

// Result is the deploy's final object.
func (k *KubeflowDeploy) Result(sum *engine.Summary, dryRun bool) *KubeflowDeployResult {
	return &KubeflowDeployResult{Header: NewHeader(KindKubeflowDeploy), DryRun: dryRun, Hosts: sum.HostCounts()}
}

// StatusResult is kubeflow status's final object: the releases,
// Deployments and URLs the run read; nil when it read none.
func (k *KubeflowDeploy) StatusResult() *KubeflowStatusResult {
	st := k.Platform.ReadStatus()
	if st == nil {
		return nil
	}
	return &KubeflowStatusResult{Header: NewHeader(KindKubeflowStatus), Healthy: st.Healthy(), Status: st}
}

// NewKubeflowStatus is `gpukit kubeflow status`: the releases, Kubeflow's
// Deployments and the URLs, read through the API; nothing changes.
func NewKubeflowStatus(inv *inventory.Inventory, o KubeflowOptions) (*KubeflowDeploy, error) {
	k, err := platform(inv, o)
	if err != nil {
		return nil, err
	}
	k.Name = "gpukit kubeflow status"
	k.Phases = []engine.Phase{k.Platform.StatusPhase()} // kubeflow/status  releases, Deployments, URLs
	return k, nil
}

// platform is the platform of inv's cluster (nil: o.Kubeconfig's, every
// addon at its default) and the one machine the API is reached from, as a
// flow without its name and phases.
func platform(inv *inventory.Inventory, o KubeflowOptions) (*KubeflowDeploy, error) {
	site, k := kubeflow.Site{}, inventory.Kubeflow{Version: inventory.DefaultKubeflowVersion}
	if inv != nil {
		if inv.Cluster.Spec.Orchestrator != inventory.Kubernetes {
			return nil, fmt.Errorf("spec.orchestrator is %s: Kubeflow runs on Kubernetes only; gpukit platform deploy -i %s deploys the platform (Traefik, monitoring, training metrics) on a swarm", inv.Cluster.Spec.Orchestrator, inv.File)
		}
		site, k = kubeflow.SiteOf(inv), inv.Cluster.Spec.Kubeflow
	}
	// The flags over the inventory's spec.kubeflow.
	m := &kubeflow.Manifests{Version: cmp.Or(o.Version, k.Version), Source: cmp.Or(o.Manifests, k.Manifests), RemoteBases: cmp.Or(o.RemoteBases, k.RemoteBases)}
	if o.Kubeconfig != nil {
		if inv == nil {
			site.Cluster = o.APIMachine // the kubeconfig's cluster
		}
		first := func(hosts []*engine.Host) []*engine.Host { return hosts[:1] }
		return &KubeflowDeploy{Platform: kubeflow.New(site, &kube.Local{Kubeconfig: o.Kubeconfig}, first, m), Cluster: site.Cluster,
			Flow: Flow{Machines: []inventory.Machine{{Name: o.APIMachine, Address: "127.0.0.1"}}, local: true}}, nil
	}
	cp, ok := kubeadm.FirstControlPlane(inv)
	if !ok {
		return nil, fmt.Errorf("the inventory has no control plane to reach the cluster through")
	}
	return &KubeflowDeploy{Platform: kubeflow.New(site, kubeadm.New(inv), firstControlPlane(inv), m), Cluster: site.Cluster,
		Flow: Flow{Machines: []inventory.Machine{cp}}}, nil
}

// CheckKubeflowSources says, before any host is reached, when a local
// source of Kubeflow's manifests is missing (found only at the Kubeflow
// phase, it would stop a run whose cluster is built), named by where it
// came from: the flag (o), else inv's spec.kubeflow.
func CheckKubeflowSources(inv *inventory.Inventory, o KubeflowOptions) error {
	var k inventory.Kubeflow
	if inv != nil {
		k = inv.Cluster.Spec.Kubeflow
	}
	for _, s := range []struct{ flag, flagPath, field, path string }{
		{"--manifests", o.Manifests, "manifests", k.Manifests},
		{"--remote-bases", o.RemoteBases, "remoteBases", k.RemoteBases},
	} {
		if s.flagPath != "" {
			if _, err := os.Stat(s.flagPath); err != nil {
				return fmt.Errorf("%s %s: %w", s.flag, s.flagPath, err)
			}
		} else if s.path != "" {
			if _, err := os.Stat(s.path); err != nil {
				return fmt.Errorf("%s: spec.kubeflow: %s: %w", inv.File, s.field, err)
			}
		}
	}
	return nil
}
