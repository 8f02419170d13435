package inventory

import (
	"net/netip"
	"strconv"

	"github.com/gpukit/gpukit/manifests"
)

// The pinned versions a host gets when spec.versions names none: the bill
// of materials' (manifests/bom.yaml), the one place versions are pinned.
var (
	DefaultNvidiaDriver      = manifests.Bill().Defaults.NvidiaDriver
	DefaultCUDA              = manifests.Bill().Defaults.CUDA
	DefaultContainerToolkit  = manifests.Bill().Defaults.ContainerToolkit
	DefaultKubernetes        = manifests.Bill().Defaults.Kubernetes
	DefaultContainerdVersion = manifests.Bill().Defaults.Containerd
	DefaultDockerVersion     = manifests.Bill().Defaults.Docker
	DefaultKubeflowVersion   = manifests.Bill().Kubeflow.Default
)

// Defaults for every other optional field. They are constants so that
// `gpukit version` can print what an inventory gets when it says nothing.
const (
	DefaultOrchestrator = Kubernetes

	DefaultSSHUser           = "root"
	DefaultSSHPort           = 22
	DefaultKnownHostsFile    = "~/.ssh/known_hosts"
	DefaultSSHConnectTimeout = "10s"

	// DefaultRuntime is the runtime for kubernetes; swarm always uses docker.
	DefaultRuntime      = RuntimeContainerd
	DefaultSwarmRuntime = RuntimeDocker

	DefaultPodCIDR     = "10.244.0.0/16"
	DefaultServiceCIDR = "10.96.0.0/12"
	DefaultCNI         = CNIFlannel

	DefaultStorage = StorageLocalPath

	// DefaultBundlePort and DefaultBundleRegistryPort are where a bundle host
	// serves its packages and its images (spec.bundle).
	DefaultBundlePort         = 8480
	DefaultBundleRegistryPort = 8443
	// DefaultIngressDomainSuffix is appended to the first ingress (else
	// control-plane or manager) host's IPv4 address: nip.io resolves
	// 10.0.0.10.nip.io and every name under it to 10.0.0.10, so ingress hosts
	// work without any DNS setup.
	DefaultIngressDomainSuffix = ".nip.io"

	DefaultDriverSource  = DriverSourceCUDARepo
	DefaultKernelModules = ModulesAuto
	DefaultSecureBoot    = SecureBootRefuse
	DefaultFabricManager = FabricManagerAuto
	DefaultRebootTimeout = "20m"
	DefaultRebootPolicy  = RebootWhenNeeded
)

// Values of the enumerated string fields.
const (
	RuntimeContainerd = "containerd"
	RuntimeDocker     = "docker"

	ContainerdFromDocker       = "docker"
	ContainerdFromDistribution = "distribution"
	NVIDIARuntimeDefault       = "default"
	NVIDIARuntimeClass         = "runtimeClass"

	CNIFlannel = "flannel"
	CNICalico  = "calico"
	CNICilium  = "cilium"
	// CNINone installs no CNI: the site brings its own after init (nodes
	// stay NotReady until it runs).
	CNINone = "none"

	// DevicePluginNVIDIA is NVIDIA's device plugin with GPU feature
	// discovery and node feature discovery (one Helm release).
	DevicePluginNVIDIA = "nvidia"
	DevicePluginNone   = "none"

	StorageLocalPath = "local-path"
	StorageNFS       = "nfs"
	StorageNone      = "none"

	DriverSourceCUDARepo     = "cuda-repo"
	DriverSourceDistribution = "distribution"

	ModulesAuto        = "auto"
	ModulesOpen        = "open"
	ModulesProprietary = "proprietary"

	SecureBootRefuse = "refuse"
	SecureBootSigned = "signed"
	SecureBootMOK    = "mok"

	FabricManagerAuto   = "auto"
	FabricManagerAlways = "always"
	FabricManagerNever  = "never"

	RebootWhenNeeded = "when-needed"
	RebootAlways     = "always"
)

// Kubernetes minor versions this gpukit installs and upgrades (the bill's).
var (
	MinKubernetesMinor = manifests.Bill().Kubernetes.MinMinor
	MaxKubernetesMinor = manifests.Bill().Kubernetes.MaxMinor
)

// KubeflowVersions returns the kubeflow/manifests releases gpukit can deploy,
// oldest first (a fresh slice on each call).
func KubeflowVersions() []string { return manifests.Bill().KubeflowVersions() }

// Default is one documented default: the field path and its value.
type Default struct {
	Path  string
	Value string
}

// Defaults lists every default, for `gpukit version` and documentation.
// Values that depend on other fields say so.
func Defaults() []Default {
	return []Default{
		{"spec.orchestrator", string(DefaultOrchestrator)},
		{"spec.ssh.user", DefaultSSHUser},
		{"spec.ssh.port", strconv.Itoa(DefaultSSHPort)},
		{"spec.ssh.knownHostsFile", DefaultKnownHostsFile},
		{"spec.ssh.connectTimeout", DefaultSSHConnectTimeout},
		{"spec.ssh.sudo.enabled", "true when the user is not root"},
		{"spec.versions.nvidiaDriver", DefaultNvidiaDriver},
		{"spec.versions.cuda", DefaultCUDA},
		{"spec.versions.containerToolkit", DefaultContainerToolkit},
		{"spec.versions.kubernetes", DefaultKubernetes + " (kubernetes only)"},
		{"spec.versions.runtime", DefaultRuntime + " (kubernetes), " + DefaultSwarmRuntime + " (swarm)"},
		{"spec.versions.containerRuntime", DefaultContainerdVersion + " (containerd from Docker's repository; the distribution's: as it ships), " + DefaultDockerVersion + " (docker from Docker's repository; Debian: its docker.io)"},
		{"spec.network.podCIDR", DefaultPodCIDR + " (kubernetes only)"},
		{"spec.network.serviceCIDR", DefaultServiceCIDR + " (kubernetes only)"},
		{"spec.network.cni", DefaultCNI + " (kubernetes only)"},
		{"spec.kubernetes.devicePlugin", DevicePluginNVIDIA + " (kubernetes only)"},
		{"spec.kubernetes.containerd.source", ContainerdFromDocker + " (kubernetes only)"},
		{"spec.kubernetes.containerd.nvidiaRuntime", NVIDIARuntimeDefault + " (kubernetes only)"},
		{"spec.addons.ingress.enabled", "true"},
		{"spec.addons.ingress.domain", "<IPv4 address of the first ingress host, else first control-plane/manager>" + DefaultIngressDomainSuffix},
		{"spec.addons.monitoring.enabled", "true"},
		{"spec.addons.storage.type", DefaultStorage},
		{"spec.kubeflow.version", DefaultKubeflowVersion},
		{"spec.nvidia.driverSource", DefaultDriverSource},
		{"spec.nvidia.kernelModules", DefaultKernelModules},
		{"spec.nvidia.secureBoot", DefaultSecureBoot},
		{"spec.nvidia.cudaToolkitRoles", "[] (no host gets the CUDA toolkit)"},
		{"spec.nvidia.fabricManager", DefaultFabricManager},
		{"spec.nvidia.rebootTimeout", DefaultRebootTimeout},
		{"spec.nvidia.rebootPolicy", DefaultRebootPolicy},
	}
}

// applyDefaults fills every optional field left empty, in the cluster (so
// that what a command prints is what it does; spec.ssh excepted, see below)
// and in the machines. It runs
// before validation so that defaults are checked against what was written
// (a host address inside the default service CIDR is still an error).
// sources[i] is the spec.hosts entry machines[i] came from.
func applyDefaults(c *Cluster, machines []Machine, sources []source) {
	s := &c.Spec
	if s.Orchestrator == "" {
		s.Orchestrator = DefaultOrchestrator
	}
	// spec.ssh and the hosts' ssh blocks stay as written: they are layers,
	// and defaulting the lower one would hide what a host inherits. The
	// machines carry the merged, defaulted, parsed result (Access).

	if b := s.Bundle; b != nil {
		if b.Port == 0 {
			b.Port = DefaultBundlePort
		}
		if b.RegistryPort == 0 {
			b.RegistryPort = DefaultBundleRegistryPort
		}
	}
	v := &s.Versions
	setDefault(&v.NvidiaDriver, DefaultNvidiaDriver)
	setDefault(&v.CUDA, DefaultCUDA)
	setDefault(&v.ContainerToolkit, DefaultContainerToolkit)
	if s.Orchestrator == Swarm {
		setDefault(&v.Runtime, DefaultSwarmRuntime)
	} else {
		setDefault(&v.Kubernetes, DefaultKubernetes)
		setDefault(&v.Runtime, DefaultRuntime)
		setDefault(&s.Network.PodCIDR, DefaultPodCIDR)
		setDefault(&s.Network.ServiceCIDR, DefaultServiceCIDR)
		setDefault(&s.Network.CNI, DefaultCNI)
		setDefault(&s.Kubernetes.Containerd.Source, ContainerdFromDocker)
		setDefault(&s.Kubernetes.DevicePlugin, DevicePluginNVIDIA)
		setDefault(&s.Kubernetes.Containerd.NVIDIARuntime, NVIDIARuntimeDefault)
	}
	// Docker's version stays empty when not written: Docker's repository
	// (Ubuntu, RHEL) gets DefaultDockerVersion, Debian its own docker.io;
	// so does the distribution's containerd.
	if v.Runtime == RuntimeContainerd && s.Kubernetes.Containerd.Source != ContainerdFromDistribution {
		setDefault(&v.ContainerRuntime, DefaultContainerdVersion)
	}

	a := &s.Addons
	if a.Ingress.Enabled == nil {
		a.Ingress.Enabled = ptr(true)
	}
	if a.Monitoring.Enabled == nil {
		a.Monitoring.Enabled = ptr(true)
	}
	setDefault(&a.Storage.Type, DefaultStorage)
	if a.Ingress.Domain == "" {
		if m := ingressHost(s.Orchestrator, machines); m != nil {
			// nip.io only maps IPv4 addresses; for a DNS name or IPv6
			// address the domain stays empty and validation warns.
			if ip, err := netip.ParseAddr(m.Address); err == nil && ip.Is4() {
				a.Ingress.Domain = ip.String() + DefaultIngressDomainSuffix
			}
		}
	}
	setDefault(&s.Kubeflow.Version, DefaultKubeflowVersion)

	n := &s.NVIDIA
	setDefault(&n.DriverSource, DefaultDriverSource)
	setDefault(&n.KernelModules, DefaultKernelModules)
	setDefault(&n.SecureBoot, DefaultSecureBoot)
	setDefault(&n.FabricManager, DefaultFabricManager)
	setDefault(&n.RebootTimeout, DefaultRebootTimeout)
	setDefault(&n.RebootPolicy, DefaultRebootPolicy)

	for i := range machines {
		entry := s.Hosts[sources[i].entry]
		machines[i].Access = access(mergeSSH(s.SSH, entry.SSH))
		machines[i].CUDAToolkit = cudaToolkit(n.CUDAToolkitRoles, machines[i].Roles, entry.CUDAToolkit)
		machines[i].NvidiaDriver, machines[i].CUDA = entry.NvidiaDriver, entry.CUDA
		machines[i].MIG = entry.MIG
		machines[i].Proxy = s.Proxy
		if entry.Proxy != nil {
			machines[i].Proxy = *entry.Proxy
		}
		if pr := &machines[i].Proxy; pr.HTTPS == "" {
			pr.HTTPS = pr.HTTP
		}
	}
}

// cudaToolkit says whether a machine gets the CUDA toolkit: its own
// setting, else whether one of its roles is listed.
func cudaToolkit(roles, have []Role, own *bool) bool {
	if own != nil {
		return *own
	}
	for _, r := range have {
		if hasRole(roles, r) {
			return true
		}
	}
	return false
}

// ingressHost is the machine whose address names the default ingress domain:
// the first ingress host, else the first control-plane (kubernetes) or
// manager (swarm).
func ingressHost(o Orchestrator, machines []Machine) *Machine {
	for i := range machines {
		if machines[i].HasRole(RoleIngress) {
			return &machines[i]
		}
	}
	first := RoleControlPlane
	if o == Swarm {
		first = RoleManager
	}
	for i := range machines {
		if machines[i].HasRole(first) {
			return &machines[i]
		}
	}
	return nil
}

func setDefault(field *string, value string) {
	if *field == "" {
		*field = value
	}
}

func ptr[T any](v T) *T { return &v }
