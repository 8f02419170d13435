package flow

import (
	"fmt"

	"github.com/gpukit/gpukit/pkg/bootstrap/kubeadm"
	"github.com/gpukit/gpukit/pkg/bootstrap/swarm"
	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/inventory"
)

// Status is `gpukit status`: the cluster's nodes as its control planes (or
// the swarm's managers) see them. It connects to those hosts only and
// changes nothing.
type Status struct {
	Flow
	sw   *swarm.Layer
	kube *kubeadm.Layer
}

// NewStatus builds the flow for inv's control planes or managers.
func NewStatus(inv *inventory.Inventory) (*Status, error) {
	if inv.Cluster.Spec.Orchestrator == inventory.Kubernetes {
		var cps []inventory.Machine
		for _, m := range inv.Machines {
			if m.HasRole(inventory.RoleControlPlane) {
				cps = append(cps, m)
			}
		}
		if len(cps) == 0 {
			return nil, fmt.Errorf("the inventory has no control plane to ask")
		}
		k := kubeadm.New(inv)
		return &Status{kube: k, Flow: Flow{
			Name:     "gpukit status",
			Machines: cps,
			Phases: []engine.Phase{
				k.Nodes(), // status/nodes  kubectl get nodes on the first control plane that answers
			},
		}}, nil
	}
	var managers []inventory.Machine
	for _, m := range inv.Machines {
		if m.HasRole(inventory.RoleManager) {
			managers = append(managers, m)
		}
	}
	sw := swarm.New(inv)
	return &Status{sw: sw, Flow: Flow{
		Name:     "gpukit status",
		Machines: managers,
		Phases: []engine.Phase{
			sw.Nodes(), // status/nodes  docker node inspect on the first manager that answers
		},
	}}, nil
}

// Nodes are the swarm's nodes the run read (nil for Kubernetes, or when no
// manager answered).
func (s *Status) Nodes() []swarm.Node {
	if s.sw == nil {
		return nil
	}
	return s.sw.ListedNodes()
}

// KubeNodes are the Kubernetes nodes the run read (nil for a swarm, or when
// no control plane answered).
func (s *Status) KubeNodes() []kubeadm.NodeStatus {
	if s.kube == nil {
		return nil
	}
	return s.kube.ListedNodes()
}
