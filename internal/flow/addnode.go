package flow

import (
	"fmt"
	"slices"

	"github.com/gpukit/gpukit/pkg/bootstrap/swarm"
	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/nvidia"
)

// AddNode is `gpukit add-node`: new hosts of the inventory are prepared as
// init prepares every host (preflight, the NVIDIA stack, docker) and join
// the swarm through its first manager, which labels their nodes. The run
// connects to the new hosts and that manager only; nothing else is touched.
type AddNode struct {
	*Preflight
}

// NewAddNode builds the flow for the named hosts of inv. Bad names are
// usage errors (exit 2): not in the inventory, the first manager itself
// (it creates the swarm: gpukit init), or a cluster that is not a swarm.
func NewAddNode(inv *inventory.Inventory, names []string, o InitOptions) (*AddNode, error) {
	if inv.Cluster.Spec.Orchestrator != inventory.Swarm {
		return nil, fmt.Errorf("add-node joins swarm hosts; orchestrator %s is not supported yet", inv.Cluster.Spec.Orchestrator)
	}
	first, ok := swarm.FirstManager(inv)
	if !ok {
		return nil, fmt.Errorf("the inventory has no manager to join through")
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("name the hosts to add")
	}
	if slices.Contains(names, first.Name) {
		return nil, fmt.Errorf("%s is the first manager: it creates the swarm (gpukit init)", first.Name)
	}
	machines, err := named(inv, names, ": add it there first")
	if err != nil {
		return nil, err
	}
	p := NewPreflight(inv)
	p.Name = "gpukit add-node"
	p.Machines = append(machines, first)
	gpu := nvidia.New(inv, o.NVIDIA)
	sw := swarm.New(inv)
	only := func(ps ...engine.Phase) []engine.Phase {
		out := make([]engine.Phase, len(ps))
		for i, ph := range ps {
			out[i] = engine.Scoped{Phase: ph, Hosts: names}
		}
		return out
	}
	p.Phases = append(only(p.Phases...), only(
		gpu.Prepare(),          // nvidia/prepare ... nvidia/verify: as in init, on the new hosts
		gpu.Driver(),           //
		gpu.FabricManager(),    //
		gpu.Persistenced(),     //
		gpu.CUDA(),             //
		gpu.ContainerToolkit(), //
		gpu.Reboot(),           //
		gpu.Verify(),           //
		sw.Engine(),            // swarm/engine         Docker engine
		sw.Runtime(),           // swarm/runtime        nvidia default runtime, GPUs advertised
		sw.JoinManagers(),      // swarm/join-managers  new managers, one at a time, through the first manager
		sw.JoinWorkers(),       // swarm/join-workers   new workers, in parallel
	)...)
	p.Phases = append(p.Phases,
		sw.Labels(names...), // swarm/labels  on the first manager: the new nodes' labels
	)
	return &AddNode{Preflight: p}, nil
}
