package flow

import (
	"fmt"

	"github.com/gpukit/gpukit/pkg/bootstrap/swarm"
	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/inventory"
)

// Status is `gpukit status`: the swarm's nodes as its managers see them. It
// connects to the managers only and changes nothing.
type Status struct {
	Flow
	sw *swarm.Layer
}

// NewStatus builds the flow for inv's managers.
func NewStatus(inv *inventory.Inventory) (*Status, error) {
	if inv.Cluster.Spec.Orchestrator != inventory.Swarm {
		return nil, fmt.Errorf("status reads a swarm; orchestrator %s is not supported yet", inv.Cluster.Spec.Orchestrator)
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

// Nodes are the nodes the run read.
func (s *Status) Nodes() []swarm.Node { return s.sw.ListedNodes() }
