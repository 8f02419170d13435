package flow

import (
	"github.com/gpukit/gpukit/pkg/bootstrap/swarm"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/nvidia"
)

// InitOptions are `gpukit init`'s choices that are not in the inventory.
type InitOptions struct {
	NVIDIA nvidia.Options
}

// Init is `gpukit init` (and `gpukit plan`, its dry-run): the whole cluster,
// layer by layer. A failed preflight check stops the run before anything is
// installed; after that, a host that fails is named and the others go on,
// and a second run continues where the first stopped.
type Init struct {
	*Preflight // its phases come first; its report says why a run stopped there
}

// NewInit builds the flow for every host of inv.
func NewInit(inv *inventory.Inventory, o InitOptions) *Init {
	p := NewPreflight(inv)
	p.Name = "gpukit init"
	gpu := nvidia.New(inv, o.NVIDIA)
	p.Phases = append(p.Phases,
		gpu.Prepare(),          // nvidia/prepare           headers and DKMS for the running kernel, nouveau off
		gpu.Driver(),           // nvidia/driver            package source, the driver at the wanted version, held
		gpu.FabricManager(),    // nvidia/fabricmanager     NVSwitch systems: the fabric manager at the driver's release
		gpu.Persistenced(),     // nvidia/persistenced      persistence mode
		gpu.CUDA(),             // nvidia/cuda              cuda-toolkit-X-Y where asked, checked against the driver
		gpu.ContainerToolkit(), // nvidia/container-toolkit pinned toolkit, the runtime pointed at it
		gpu.Reboot(),           // nvidia/reboot            only where the new driver needs it, a few hosts at a time
		gpu.Verify(),           // nvidia/verify            nvidia-smi, GPU count, driver version, persistence mode
	)
	if inv.Cluster.Spec.Orchestrator == inventory.Swarm {
		sw := swarm.New(inv)
		p.Phases = append(p.Phases,
			sw.Engine(),       // swarm/engine         Docker engine per OS family, pinned, held, running
			sw.Runtime(),      // swarm/runtime        nvidia as docker's default runtime, GPUs advertised by UUID, swarm-resource
			sw.Init(),         // swarm/init           the swarm, on the first manager
			sw.JoinManagers(), // swarm/join-managers  the other managers, one at a time
			sw.JoinWorkers(),  // swarm/join-workers   the workers, in parallel
			sw.Labels(),       // swarm/labels         node labels from the facts and the inventory
		)
	}
	return &Init{Preflight: p}
}
