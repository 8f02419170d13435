package flow

import (
	"fmt"

	"github.com/gpukit/gpukit/pkg/bootstrap/kubeadm"
	"github.com/gpukit/gpukit/pkg/bootstrap/swarm"
	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/kubeflow"
	"github.com/gpukit/gpukit/pkg/swarmplatform"
)

// PlatformDeploy is `gpukit platform deploy`: the platform on the cluster
// gpukit built, without Kubeflow. On swarm, the platform's stacks through
// the first manager's docker; on Kubernetes, kubeflow deploy's platform
// phases through the first control plane's connection.
type PlatformDeploy struct {
	Flow
	// Swarm or Kube is the platform deployed, by the orchestrator.
	Swarm *swarmplatform.Platform
	Kube  *kubeflow.Platform
}

// NewPlatformDeploy builds the flow for the cluster of inv.
func NewPlatformDeploy(inv *inventory.Inventory) (*PlatformDeploy, error) {
	if inv.Cluster.Spec.Orchestrator == inventory.Kubernetes {
		cp, ok := kubeadm.FirstControlPlane(inv)
		if !ok {
			return nil, fmt.Errorf("the inventory has no control plane to reach the cluster through")
		}
		p := kubeflow.New(kubeflow.SiteOf(inv), kubeadm.New(inv), firstControlPlane(inv), nil)
		return &PlatformDeploy{Kube: p, Flow: Flow{Name: "gpukit platform deploy", Machines: []inventory.Machine{cp}, Phases: p.Phases()}}, nil
	}
	m, ok := swarm.FirstManager(inv)
	if !ok {
		return nil, fmt.Errorf("the inventory has no manager to reach the swarm through")
	}
	p := swarmplatform.New(swarmplatform.SiteOf(inv), firstManager(inv))
	return &PlatformDeploy{Swarm: p, Flow: Flow{Name: "gpukit platform deploy", Machines: []inventory.Machine{m}, Phases: p.Phases()}}, nil
}

// firstManager targets the first manager of inv among the run's hosts:
// the swarm's docker is reached through it.
func firstManager(inv *inventory.Inventory) func([]*engine.Host) []*engine.Host {
	return hostTarget(swarm.FirstManager(inv))
}

// Credentials are the logins the run generated.
func (p *PlatformDeploy) Credentials() []kubeflow.Credential {
	if p.Kube != nil {
		return p.Kube.Credentials()
	}
	return swarmCredentials(p.Swarm)
}

// swarmCredentials are the swarm platform's generated logins as the
// command line writes every platform's.
func swarmCredentials(p *swarmplatform.Platform) []kubeflow.Credential {
	var out []kubeflow.Credential
	for _, c := range p.Credentials() {
		out = append(out, kubeflow.Credential{What: c.What, User: c.User, Password: c.Password})
	}
	return out
}

// Result is the deploy's final object.
func (p *PlatformDeploy) Result(sum *engine.Summary, dryRun bool) *PlatformDeployResult {
	return &PlatformDeployResult{Header: NewHeader(KindPlatformDeploy), DryRun: dryRun, Hosts: sum.HostCounts()}
}

// NewPlatformStatus is `gpukit platform status`: the platform's services
// and URLs, read; nothing changes. On swarm, through the first manager's
// docker; on Kubernetes it is kubeflow status (the releases, the
// Deployments, the URLs).
func NewPlatformStatus(inv *inventory.Inventory) (*PlatformDeploy, error) {
	if inv.Cluster.Spec.Orchestrator == inventory.Kubernetes {
		k, err := NewKubeflowStatus(inv, KubeflowOptions{})
		if err != nil {
			return nil, err
		}
		k.Name = "gpukit platform status"
		return &PlatformDeploy{Kube: k.Platform, Flow: k.Flow}, nil
	}
	m, ok := swarm.FirstManager(inv)
	if !ok {
		return nil, fmt.Errorf("the inventory has no manager to reach the swarm through")
	}
	p := swarmplatform.New(swarmplatform.SiteOf(inv), firstManager(inv))
	return &PlatformDeploy{Swarm: p, Flow: Flow{Name: "gpukit platform status", Machines: []inventory.Machine{m},
		Phases: []engine.Phase{p.StatusPhase()}}}, nil // status/platform  the services on the first manager, and the URLs
}

// StatusResult is platform status's final object; nil when nothing was
// read (the first manager or control plane did not answer).
func (p *PlatformDeploy) StatusResult() *PlatformStatusResult {
	r := &PlatformStatusResult{Header: NewHeader(KindPlatformStatus)}
	if p.Kube != nil {
		st := p.Kube.ReadStatus()
		if st == nil {
			return nil
		}
		r.Healthy, r.Kubernetes = st.Healthy(), st
		return r
	}
	st := p.Swarm.ReadStatus()
	if st == nil {
		return nil
	}
	r.Healthy, r.Swarm = len(st.Problems()) == 0, st
	return r
}
