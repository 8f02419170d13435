package flow

import (
	"fmt"

	"github.com/gpukit/gpukit/pkg/bootstrap/swarm"
	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/inventory"
)

// Reset is `gpukit reset`: hosts leave the swarm and get docker's
// configuration back as it was before gpukit (packages stay). With some
// hosts named, a manager that stays demotes the leaving managers first and
// removes the leaving nodes from its list after.
type Reset struct {
	Flow
	// Hosts are the hosts reset.
	Hosts []string
}

// NewReset builds the flow for the named hosts of inv (none: every host).
func NewReset(inv *inventory.Inventory, names []string) (*Reset, error) {
	if inv.Cluster.Spec.Orchestrator != inventory.Swarm {
		return nil, fmt.Errorf("reset undoes a swarm; orchestrator %s is not supported yet", inv.Cluster.Spec.Orchestrator)
	}
	var machines []inventory.Machine
	if len(names) == 0 {
		machines = inv.Machines
		for _, m := range machines {
			names = append(names, m.Name)
		}
	} else {
		var err error
		if machines, err = named(inv, names, ""); err != nil {
			return nil, err
		}
	}
	if m, ok := swarm.RemainingManager(inv, names); ok {
		machines = append(machines, m)
	}
	sw := swarm.New(inv)
	return &Reset{Hosts: names, Flow: Flow{
		Name:     "gpukit reset",
		Machines: machines,
		Phases: []engine.Phase{
			sw.Demote(names), // reset/demote        a staying manager demotes the leaving managers
			engine.Scoped{Phase: sw.Leave(), Hosts: names}, // reset/leave         leave the swarm, restore daemon.json and the runtime's config
			sw.RemoveNodes(names),                          // reset/remove-nodes  the staying manager forgets the nodes that left
		},
	}}, nil
}
