package flow

import (
	"github.com/gpukit/gpukit/pkg/bootstrap/kubeadm"
	"github.com/gpukit/gpukit/pkg/bootstrap/swarm"
	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/etcd"
	"github.com/gpukit/gpukit/pkg/hostproxy"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/kube"
	"github.com/gpukit/gpukit/pkg/kubeflow"
	"github.com/gpukit/gpukit/pkg/nvidia"
	"github.com/gpukit/gpukit/pkg/probe"
	"github.com/gpukit/gpukit/pkg/swarmplatform"
)

// InitOptions are `gpukit init`'s choices that are not in the inventory.
type InitOptions struct {
	NVIDIA nvidia.Options
	// BundleBinary is the gpukit executable a bundle host runs
	// (spec.bundle): linux, on the host's architecture.
	BundleBinary string
}

// Init is `gpukit init` (and `gpukit plan`, its dry-run): the whole cluster,
// layer by layer. A failed preflight check stops the run before anything is
// installed; after that, a host that fails is named and the others go on,
// and a second run continues where the first stopped.
type Init struct {
	*Preflight // its phases come first; its report says why a run stopped there
	// Kube is the Kubernetes layer (nil for swarm): its Kubeconfig is the
	// cluster's admin kubeconfig once the run fetched it.
	Kube *kubeadm.Layer
	// Platform is the platform on top (nil for swarm): the logins it
	// generated. SwarmPlatform is swarm's (nil for Kubernetes).
	Platform      *kubeflow.Platform
	SwarmPlatform *swarmplatform.Platform
}

// Credentials are the logins the platform generated in this run.
func (i *Init) Credentials() []kubeflow.Credential {
	switch {
	case i.Platform != nil:
		return i.Platform.Credentials()
	case i.SwarmPlatform != nil:
		return swarmCredentials(i.SwarmPlatform)
	}
	return nil
}

// firstControlPlane targets the first control plane of inv among the
// run's hosts: the API is reached through it.
func firstControlPlane(inv *inventory.Inventory) func([]*engine.Host) []*engine.Host {
	return hostTarget(kubeadm.FirstControlPlane(inv))
}

// hostTarget targets m among the run's hosts, when ok and it is there.
// nvidiaLayer is the NVIDIA layer of a run, which probes a host's facts
// when no earlier phase did (--only-phases).
func nvidiaLayer(inv *inventory.Inventory, o nvidia.Options) *nvidia.Layer {
	o.Facts = probe.Ensure
	return nvidia.New(inv, o)
}

func hostTarget(m inventory.Machine, ok bool) func([]*engine.Host) []*engine.Host {
	return func(hosts []*engine.Host) []*engine.Host {
		for _, h := range hosts {
			if ok && h.Name() == m.Name {
				return []*engine.Host{h}
			}
		}
		return nil
	}
}

// NewInit builds the flow for every host of inv.
func NewInit(inv *inventory.Inventory, o InitOptions) *Init {
	p := newPreflight(inv)
	p.Name = "gpukit init"
	gpu := nvidiaLayer(inv, o.NVIDIA)
	p.Phases = append(p.Phases, bundlePhases(inv, o.BundleBinary)...) // bundle/serve, bundle/sources with spec.bundle
	p.Phases = append(p.Phases,
		hostproxy.New(inv).Apply(), // host/proxy         apt/dnf, containerd or dockerd, the kubelet through spec.proxy
		gpu.Prepare(),              // nvidia/prepare           headers and DKMS for the running kernel, nouveau off
		gpu.Driver(),               // nvidia/driver            package source, the driver at the wanted version, held
		gpu.FabricManager(),        // nvidia/fabricmanager     NVSwitch systems: the fabric manager at the driver's release
		gpu.Persistenced(),         // nvidia/persistenced      persistence mode
		gpu.CUDA(),                 // nvidia/cuda              cuda-toolkit-X-Y where asked, checked against the driver
		gpu.ContainerToolkit(),     // nvidia/container-toolkit pinned toolkit, the runtime pointed at it
		gpu.Reboot(),               // nvidia/reboot            only where the new driver needs it, a few hosts at a time
		gpu.Verify(),               // nvidia/verify            nvidia-smi, GPU count, driver version, persistence mode
		gpu.MIG(),                  // nvidia/mig               the host's MIG layout, and the boot unit that applies it again
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
		// platform/ingress ... platform/training-metrics: as gpukit
		// platform deploy runs them, those spec.addons enables.
		platform := swarmplatform.New(swarmplatform.SiteOf(inv), firstManager(inv))
		p.Phases = append(p.Phases, platform.Phases()...)
		return &Init{Preflight: p, SwarmPlatform: platform}
	}
	if inv.Cluster.Spec.Orchestrator == inventory.Kubernetes {
		kube := kubeadm.New(inv)
		p.Phases = append(p.Phases,
			kube.Prepare(),           // kubernetes/prepare              swap off, overlay and br_netfilter, sysctls
			kube.Packages(),          // kubernetes/packages             kubeadm, kubelet, kubectl from the minor's repository, pinned, held
			kube.Containerd(),        // kubernetes/containerd           containerd, its config for the installed major, NVIDIA runtime, registry mirror
			kube.Init(),              // kubernetes/init                 kubeadm init on the first control plane
			kube.JoinControlPlanes(), // kubernetes/join-control-planes  the other control planes, one at a time
			kube.JoinWorkers(),       // kubernetes/join-workers         the workers, in parallel
			etcd.Schedule(inv),       // kubernetes/etcd-backup          spec.kubernetes.etcdBackup: a timer's etcd snapshots on the control planes
			kube.FetchKubeconfig(),   // kubernetes/kubeconfig           the admin kubeconfig, for ./<cluster>.kubeconfig
			kube.Labels(),            // kubernetes/labels               node labels from the GPU facts and the inventory, its taints
			kube.CNI(),               // kubernetes/cni                  the pod network (flannel, calico or cilium), a Helm release
			kube.GPU(),               // kubernetes/gpu                  NVIDIA device plugin, GPU and node feature discovery, RuntimeClass nvidia
		)
		// platform/storage ... platform/routes: as gpukit kubeflow deploy
		// runs them (flow/kubeflow.go), those spec.addons enables; Kubeflow
		// with spec.kubeflow.enabled, its manifests from spec.kubeflow
		// (manifests, remoteBases) or the tag's archive.
		var m *kubeflow.Manifests
		if k := inv.Cluster.Spec.Kubeflow; k.Enabled {
			m = &kubeflow.Manifests{Version: k.Version, Source: k.Manifests, RemoteBases: k.RemoteBases}
		}
		platform := kubeflow.New(kubeflow.SiteOf(inv), kube, firstControlPlane(inv), m)
		p.Phases = append(p.Phases, platform.Phases()...)
		return &Init{Preflight: p, Kube: kube, Platform: platform}
	}
	return &Init{Preflight: p}
}

// MergeKubeconfig merges the admin kubeconfig of the cluster into the
// user's kubeconfig (kube.UserKubeconfig) as context
// <cluster>-admin@<cluster>, made current (init --merge-kubeconfig).
func MergeKubeconfig(cluster string, admin []byte) (*MergedKubeconfig, error) {
	path, err := kube.UserKubeconfig()
	if err != nil {
		return nil, err
	}
	changed, err := kube.MergeKubeconfig(path, cluster, admin)
	if err != nil {
		return nil, err
	}
	return &MergedKubeconfig{Path: path, Context: cluster + "-admin@" + cluster, Changed: changed}, nil
}
