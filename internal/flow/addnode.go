package flow

import (
	"fmt"
	"slices"

	"github.com/gpukit/gpukit/pkg/bootstrap/kubeadm"
	"github.com/gpukit/gpukit/pkg/bootstrap/swarm"
	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/etcd"
	"github.com/gpukit/gpukit/pkg/hostproxy"
	"github.com/gpukit/gpukit/pkg/inventory"
)

// AddNode is `gpukit add-node`: new hosts of the inventory are prepared as
// init prepares every host (preflight, the NVIDIA stack, then docker or the
// kubelet's prerequisites, packages and containerd) and join the cluster
// through its first manager or control plane (which, for a swarm, labels
// their nodes). The run connects to the new hosts and that host only;
// nothing else is touched.
type AddNode struct {
	*Preflight
}

// NewAddNode builds the flow for the named hosts of inv. Bad names are
// usage errors (exit 2): not in the inventory, or the first manager or
// control plane itself (it creates the cluster: gpukit init).
func NewAddNode(inv *inventory.Inventory, names []string, o InitOptions) (*AddNode, error) {
	kube := inv.Cluster.Spec.Orchestrator == inventory.Kubernetes
	first, ok := swarm.FirstManager(inv)
	role, creates := "manager", "the swarm"
	if kube {
		first, ok = kubeadm.FirstControlPlane(inv)
		role, creates = "control plane", "the cluster"
	}
	if !ok {
		return nil, fmt.Errorf("the inventory has no %s to join through", role)
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("name the hosts to add")
	}
	if slices.Contains(names, first.Name) {
		return nil, fmt.Errorf("%s is the first %s: it creates %s (gpukit init)", first.Name, role, creates)
	}
	machines, err := named(inv, names, ": add it there first")
	if err != nil {
		return nil, err
	}
	p := newPreflight(inv)
	p.Name = "gpukit add-node"
	p.Machines = append(machines, first)
	gpu := nvidiaLayer(inv, o.NVIDIA)
	only := func(ps ...engine.Phase) []engine.Phase {
		out := make([]engine.Phase, len(ps))
		for i, ph := range ps {
			out[i] = engine.Scoped{Phase: ph, Hosts: names}
		}
		return out
	}
	p.Phases = append(only(p.Phases...), only(bundleSources(inv)...)...) // bundle/sources  with spec.bundle: the new hosts install from it (its host serves it already)
	p.Phases = append(p.Phases, only(
		hostproxy.New(inv).Apply(), // host/proxy, nvidia/prepare ... nvidia/verify: as in init, on the new hosts
		gpu.Prepare(),              //
		gpu.Driver(),               //
		gpu.FabricManager(),        //
		gpu.Persistenced(),         //
		gpu.CUDA(),                 //
		gpu.ContainerToolkit(),     //
		gpu.Reboot(),               //
		gpu.Verify(),               //
		gpu.MIG(),                  //
	)...)
	if kube {
		k := kubeadm.New(inv)
		p.Phases = append(p.Phases, only(
			k.Prepare(),           // kubernetes/prepare ... kubernetes/containerd: as in init, on the new hosts
			k.Packages(),          //
			k.Containerd(),        //
			k.JoinControlPlanes(), // kubernetes/join-control-planes  new control planes, one at a time, through the first
			k.JoinWorkers(),       // kubernetes/join-workers         new workers, in parallel
			etcd.Schedule(inv),    // kubernetes/etcd-backup          new control planes: the scheduled snapshots' timer
		)...)
		p.Phases = append(p.Phases,
			k.Labels(names...), // kubernetes/labels  through the first control plane: the new nodes' labels and taints
		)
		return &AddNode{Preflight: p}, nil
	}
	sw := swarm.New(inv)
	p.Phases = append(p.Phases, only(
		sw.Engine(),       // swarm/engine         Docker engine
		sw.Runtime(),      // swarm/runtime        nvidia default runtime, GPUs advertised
		sw.JoinManagers(), // swarm/join-managers  new managers, one at a time, through the first manager
		sw.JoinWorkers(),  // swarm/join-workers   new workers, in parallel
	)...)
	p.Phases = append(p.Phases,
		sw.Labels(names...), // swarm/labels  on the first manager: the new nodes' labels
	)
	return &AddNode{Preflight: p}, nil
}
