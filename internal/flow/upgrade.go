package flow

import (
	"fmt"

	"github.com/gpukit/gpukit/pkg/bootstrap/kubeadm"
	"github.com/gpukit/gpukit/pkg/bootstrap/swarm"
	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/kube"
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
// install: the host the cluster is reached through (Kubernetes: the first
// control plane, where the etcd snapshot is taken; swarm: the first
// manager) and the GPU hosts to upgrade (the named ones, or all).
func NewUpgradeDriver(inv *inventory.Inventory, o UpgradeOptions) (*UpgradeDriver, error) {
	gpu := nvidiaLayer(inv, o.NVIDIA)
	change := []engine.Phase{
		gpu.Prepare(),          // nvidia/prepare           headers and DKMS for the running kernel
		gpu.Driver(),           // nvidia/driver            unhold, the new release, hold
		gpu.FabricManager(),    // nvidia/fabricmanager     NVSwitch systems: at the driver's release
		gpu.Persistenced(),     // nvidia/persistenced      persistence mode
		gpu.CUDA(),             // nvidia/cuda              cuda-toolkit-X-Y, checked against the driver
		gpu.ContainerToolkit(), // nvidia/container-toolkit the pinned toolkit
		gpu.Reboot(),           // nvidia/reboot            only where the new driver needs it
	}
	verify := []engine.Phase{gpu.Verify()} // nvidia/verify  nvidia-smi: every GPU, the versions
	return newRollout("gpukit upgrade driver", inv, o, change, verify)
}

// newRollout is a rolling flow of change and verify over the GPU nodes,
// through the cluster's orchestrator: `gpukit upgrade driver`'s, and
// `gpukit mig apply`'s.
func newRollout(name string, inv *inventory.Inventory, o UpgradeOptions, change, verify []engine.Phase) (*UpgradeDriver, error) {
	var (
		first   inventory.Machine
		ok      bool
		connect upgrade.Connect
		target  func([]*engine.Host) []*engine.Host
	)
	switch {
	case inv.Cluster.Spec.Orchestrator == inventory.Swarm && o.Kubeconfig != nil:
		return nil, fmt.Errorf("--kubeconfig: spec.orchestrator is swarm; the swarm is reached through its first manager")
	case inv.Cluster.Spec.Orchestrator == inventory.Swarm:
		first, ok = swarm.FirstManager(inv)
		if !ok {
			return nil, fmt.Errorf("the inventory has no manager to reach the swarm through")
		}
		connect, target = upgrade.SwarmConnect(inv, o.Upgrade.Poll), hostTarget(first, ok)
		// swarm/runtime  the NVIDIA runtime still docker's default and the GPUs
		//                still advertised (a new container toolkit may have
		//                rewritten its config.toml): docker restarted if not
		verify = append(verify, swarm.New(inv).Runtime())
	default:
		first, ok = kubeadm.FirstControlPlane(inv)
		var api kube.API = kubeadm.New(inv)
		if o.Kubeconfig != nil {
			api = &kube.Local{Kubeconfig: o.Kubeconfig}
		}
		if !ok {
			return nil, fmt.Errorf("the inventory has no control plane to reach the cluster through")
		}
		connect, target = upgrade.KubeConnect(inv, api, o.Upgrade.Poll), hostTarget(first, ok)
	}
	machines := inv.Machines
	if len(o.Upgrade.Named) > 0 {
		named, err := named(inv, o.Upgrade.Named, "")
		if err != nil {
			return nil, err
		}
		machines = []inventory.Machine{first}
		for _, m := range named {
			if m.Name != first.Name {
				machines = append(machines, m)
			}
		}
	}
	up := upgrade.New(inv, connect, target, change, verify, o.Upgrade)
	// The facts, then the upgrade's check, plan, etcd snapshot and the
	// rollout of change and verify wave by wave: `gpukit upgrade driver
	// --list-phases` prints the list as this builds it.
	phases := append([]engine.Phase{preflight.New(inv).Facts()}, up.Phases()...)
	return &UpgradeDriver{Upgrade: up, Flow: Flow{Name: name, Machines: machines, Phases: phases}}, nil
}

// Result is how far the rollout got: complete only when nothing failed, the
// run was not stopped and every node asked for runs the new versions.
func (u *UpgradeDriver) Result(sum *engine.Summary, dryRun bool) *UpgradeResult {
	up := u.Upgrade
	return &UpgradeResult{
		Header:   NewHeader(KindUpgrade),
		Complete: len(sum.Failed()) == 0 && !sum.Cancelled && up.Complete(),
		Order:    up.Order(), Waves: up.Waves(), Snapshot: up.Snapshot(),
		Unfinished:  up.Unfinished(),
		APIRequests: up.APIRequests(), DryRun: dryRun, Hosts: sum.HostCounts(),
	}
}
