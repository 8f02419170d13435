package flow

import (
	"fmt"

	"github.com/gpukit/gpukit/pkg/bootstrap/kubeadm"
	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/kubeflow"
	"github.com/gpukit/gpukit/pkg/nvidia"
	"github.com/gpukit/gpukit/pkg/preflight"
	"github.com/gpukit/gpukit/pkg/upgrade"
)

// UpgradeOptions are `gpukit upgrade driver`'s choices that are not in the
// inventory (the new versions are: the CLI applies --driver, --cuda and
// --toolkit to it).
type UpgradeOptions struct {
	NVIDIA  nvidia.Options
	Upgrade upgrade.Options
	// Kubeconfig reaches the API from this machine instead of through the
	// first control plane's connection (--kubeconfig).
	Kubeconfig []byte
}

// UpgradeDriver is `gpukit upgrade driver`: a rolling upgrade of the NVIDIA
// stack, the GPU nodes a wave at a time.
type UpgradeDriver struct {
	Flow
	Upgrade *upgrade.Upgrade
}

// NewUpgradeDriver builds the flow for inv, whose versions are the ones to
// install: the first control plane (the API is reached through it, the etcd
// snapshot taken there) and the GPU hosts to upgrade (the named ones, or
// all).
func NewUpgradeDriver(inv *inventory.Inventory, o UpgradeOptions) (*UpgradeDriver, error) {
	if inv.Cluster.Spec.Orchestrator != inventory.Kubernetes {
		return nil, fmt.Errorf("spec.orchestrator is %s: gpukit upgrade driver rolls through Kubernetes nodes; a swarm's nodes are drained with docker node update --availability drain, which this release does not do yet", inv.Cluster.Spec.Orchestrator)
	}
	cp, ok := kubeadm.FirstControlPlane(inv)
	if !ok {
		return nil, fmt.Errorf("the inventory has no control plane to reach the cluster through")
	}
	machines := inv.Machines
	if len(o.Upgrade.Named) > 0 {
		named, err := named(inv, o.Upgrade.Named, "")
		if err != nil {
			return nil, err
		}
		machines = []inventory.Machine{cp}
		for _, m := range named {
			if m.Name != cp.Name {
				machines = append(machines, m)
			}
		}
	}
	var api upgrade.API = kubeadm.New(inv)
	if o.Kubeconfig != nil {
		api = &kubeflow.KubeconfigAPI{Kubeconfig: o.Kubeconfig}
	}
	gpu := nvidia.New(inv, o.NVIDIA)
	up := upgrade.New(inv, api, firstControlPlane(inv), []engine.Phase{
		gpu.Prepare(),          // nvidia/prepare           headers and DKMS for the running kernel
		gpu.Driver(),           // nvidia/driver            unhold, the new release, hold
		gpu.FabricManager(),    // nvidia/fabricmanager     NVSwitch systems: at the driver's release
		gpu.Persistenced(),     // nvidia/persistenced      persistence mode
		gpu.CUDA(),             // nvidia/cuda              cuda-toolkit-X-Y, checked against the driver
		gpu.ContainerToolkit(), // nvidia/container-toolkit the pinned toolkit
		gpu.Reboot(),           // nvidia/reboot            only where the new driver needs it
	}, gpu.Verify(), o.Upgrade)
	phases := []engine.Phase{preflight.New(inv).Facts()} // preflight/facts  probe each host in one round trip
	// upgrade/check             what each GPU host needs (the NVIDIA layer's checks, nothing changed)
	// upgrade/plan              the nodes, the budget (--max-unavailable of the GPU nodes), the order
	// upgrade/etcd-snapshot     etcd snapshot on the first control plane, before the first node
	// upgrade/rollout           wave by wave, within the budget (failed and cordoned nodes count):
	//   upgrade/cordon              cordoned, marked as gpukit's
	//   upgrade/drain               training asked to checkpoint, waited for or the node left alone; drain through PDBs
	//   upgrade/stop-gpu-consumers  no process computing on the GPUs; persistenced, fabric manager, DCGM stopped
	//   nvidia/prepare ... nvidia/reboot, nvidia/verify   as init runs them, at the new versions
	//   upgrade/gpus                the device plugin restarted, the GPUs allocatable again
	//   upgrade/uncordon            back in service
	phases = append(phases, up.Phases()...)
	return &UpgradeDriver{Upgrade: up, Flow: Flow{Name: "gpukit upgrade driver", Machines: machines, Phases: phases}}, nil
}
