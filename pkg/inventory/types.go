// Package inventory is the versioned description of a GPU cluster (apiVersion
// gpukit.dev/v1alpha1, kind Cluster): which hosts, how to reach them, what to
// install on them. Load decodes it strictly with file:line:column positions,
// expands host ranges, applies defaults and validates it, reporting every
// problem at once.
package inventory

// APIVersion and Kind identify the only format this package reads.
const (
	APIVersion = "gpukit.dev/v1alpha1"
	Kind       = "Cluster"
)

// Orchestrator names what runs on top of the NVIDIA stack.
type Orchestrator string

const (
	Kubernetes Orchestrator = "kubernetes"
	Swarm      Orchestrator = "swarm"
)

// Role is what a host does in the cluster.
type Role string

const (
	RoleControlPlane Role = "control-plane" // kubernetes
	RoleWorker       Role = "worker"        // kubernetes and swarm
	RoleIngress      Role = "ingress"       // kubernetes: runs the Traefik ingress
	RoleManager      Role = "manager"       // swarm
)

// Cluster is the whole inventory document.
type Cluster struct {
	// APIVersion is the format version, gpukit.dev/v1alpha1.
	APIVersion string `yaml:"apiVersion" json:"apiVersion" jsonschema:"enum=gpukit.dev/v1alpha1"`
	// Kind is always Cluster.
	Kind string `yaml:"kind" json:"kind" jsonschema:"enum=Cluster"`
	// Metadata names the cluster.
	Metadata Metadata `yaml:"metadata" json:"metadata"`
	// Spec describes the hosts and what to install on them.
	Spec Spec `yaml:"spec" json:"spec"`
}

// Metadata names the cluster.
type Metadata struct {
	// Name of the cluster: an RFC 1123 label, used in kubeconfig contexts and log directories.
	Name string `yaml:"name" json:"name"`
}

// Spec is everything about the cluster except its name.
type Spec struct {
	// Orchestrator: kubernetes (kubeadm) or swarm (Docker Swarm). Default kubernetes.
	Orchestrator Orchestrator `yaml:"orchestrator,omitempty" json:"orchestrator,omitempty" jsonschema:"enum=kubernetes,enum=swarm"`
	// AllowInlineSecrets permits password values written in this file in plain text.
	AllowInlineSecrets bool `yaml:"allowInlineSecrets,omitempty" json:"allowInlineSecrets,omitempty"`
	// SSH holds the connection defaults for every host; hosts may override any field.
	SSH SSH `yaml:"ssh,omitempty" json:"ssh,omitempty"`
	// Hosts lists the machines. A name and address may hold one range each ("gpu-[001:200]",
	// "10.0.1.[1:200]"), expanded in step.
	Hosts []Host `yaml:"hosts" json:"hosts" jsonschema:"minItems=1"`
	// Versions pins the NVIDIA stack, the container runtime and Kubernetes.
	Versions Versions `yaml:"versions,omitempty" json:"versions,omitempty"`
	// NVIDIA says how the driver, CUDA and the container toolkit are installed.
	NVIDIA NVIDIA `yaml:"nvidia,omitempty" json:"nvidia,omitempty"`
	// Network is the Kubernetes pod and service layout (ignored for swarm).
	Network Network `yaml:"network,omitempty" json:"network,omitempty"`
	// Addons are the platform services: ingress, monitoring, storage.
	Addons Addons `yaml:"addons,omitempty" json:"addons,omitempty"`
	// Kubeflow is the optional ML platform (kubernetes only).
	Kubeflow Kubeflow `yaml:"kubeflow,omitempty" json:"kubeflow,omitempty"`
	// Mirrors replace the public package, chart and image sources (air-gapped sites, the lab).
	Mirrors Mirrors `yaml:"mirrors,omitempty" json:"mirrors,omitempty"`
	// Bundle serves an offline bundle (made by `gpukit bundle create`) from one of the hosts:
	// every package, chart, manifest and image of the run then comes from it, and the mirrors
	// are set to it (leave spec.mirrors and spec.kubeflow's manifests unset).
	Bundle *Bundle `yaml:"bundle,omitempty" json:"bundle,omitempty"`
	// Kubernetes tunes kubeadm, the kubelet, kube-proxy and containerd (kubernetes only).
	Kubernetes KubernetesSpec `yaml:"kubernetes,omitempty" json:"kubernetes,omitempty"`
	// Proxy is the HTTP proxy the hosts reach the outside through: apt or dnf, containerd,
	// dockerd and the kubelet use it; hosts may override it. gpukit itself (charts, manifests)
	// uses this machine's HTTPS_PROXY/NO_PROXY.
	Proxy Proxy `yaml:"proxy,omitempty" json:"proxy,omitempty"`
}

// Proxy is an HTTP proxy for the hosts' outgoing traffic.
type Proxy struct {
	// HTTP is the proxy for http:// URLs, http://host:port.
	HTTP string `yaml:"http,omitempty" json:"http,omitempty"`
	// HTTPS is the proxy for https:// URLs (CONNECT), http://host:port or https://host:port.
	// Default: HTTP.
	HTTPS string `yaml:"https,omitempty" json:"https,omitempty"`
	// NoProxy are the destinations reached directly: host names, .domain suffixes, IP
	// addresses and CIDRs. gpukit adds localhost, every host's addresses and names, the pod
	// and service networks, the control-plane endpoint and the cluster's service domains.
	// apt honours only its host names and addresses, dnf none of them.
	NoProxy []string `yaml:"noProxy,omitempty" json:"noProxy,omitempty"`
}

// Enabled says whether p sends anything through a proxy.
func (p Proxy) Enabled() bool { return p.HTTP != "" || p.HTTPS != "" }

// KubernetesSpec is what kubeadm, the kubelet, kube-proxy and containerd are
// told beyond the defaults: each field exists because real hosts need it.
type KubernetesSpec struct {
	// ControlPlaneEndpoint is the API's address for every node and client, host[:port] (port
	// 6443): a load balancer in front of the control planes, required with more than one.
	// Default: the first control-plane host's address.
	ControlPlaneEndpoint string `yaml:"controlPlaneEndpoint,omitempty" json:"controlPlaneEndpoint,omitempty"`
	// CertSANs are extra names and addresses in the API server's certificate.
	CertSANs []string `yaml:"certSANs,omitempty" json:"certSANs,omitempty"`
	// ImageRepository replaces registry.k8s.io for the control plane's images, host[:port][/path].
	// Default: spec.mirrors.registry when set.
	ImageRepository string `yaml:"imageRepository,omitempty" json:"imageRepository,omitempty"`
	// IgnorePreflightErrors are kubeadm preflight checks to pass over (SystemVerification, ...).
	IgnorePreflightErrors []string `yaml:"ignorePreflightErrors,omitempty" json:"ignorePreflightErrors,omitempty"`
	// Kubelet settings.
	Kubelet KubeletSpec `yaml:"kubelet,omitempty" json:"kubelet,omitempty"`
	// KubeProxy settings.
	KubeProxy KubeProxySpec `yaml:"kubeProxy,omitempty" json:"kubeProxy,omitempty"`
	// Containerd settings.
	Containerd ContainerdSpec `yaml:"containerd,omitempty" json:"containerd,omitempty"`
	// DevicePlugin: nvidia (NVIDIA's device plugin, GPU feature discovery and node feature
	// discovery, one Helm release: nodes advertise nvidia.com/gpu) or none. Default nvidia.
	DevicePlugin string `yaml:"devicePlugin,omitempty" json:"devicePlugin,omitempty" jsonschema:"enum=nvidia,enum=none"`
	// GPUSharing is the device plugin's configuration: how MIG devices are advertised, and
	// GPUs shared by time-slicing or MPS, per node group.
	GPUSharing GPUSharing `yaml:"gpuSharing,omitempty" json:"gpuSharing,omitempty"`
	// EtcdBackup schedules etcd snapshots on every control plane (a systemd timer, kept in
	// /var/lib/gpukit/etcd-snapshots). Default: none; gpukit etcd backup takes one at any time.
	EtcdBackup *EtcdBackupSpec `yaml:"etcdBackup,omitempty" json:"etcdBackup,omitempty"`
}

// EtcdBackupSpec is the scheduled etcd backup of the control planes.
type EtcdBackupSpec struct {
	// Schedule is a systemd calendar event (systemd.time(7)): daily, hourly, "*-*-* 02:00:00".
	// Default daily.
	Schedule string `yaml:"schedule,omitempty" json:"schedule,omitempty"`
	// Keep is how many scheduled snapshots each control plane keeps, the newest. Default 7.
	Keep int `yaml:"keep,omitempty" json:"keep,omitempty" jsonschema:"minimum=1,maximum=1000"`
}

// GPUSharing configures NVIDIA's device plugin (and GPU feature discovery). A node takes the
// configuration its label nvidia.com/device-plugin.config (spec.hosts[].labels) names, else
// Default; each is checked with the device plugin's own config package.
type GPUSharing struct {
	// MIGStrategy: none (MIG devices not advertised), single (each node's MIG devices, all of
	// one profile, as nvidia.com/gpu) or mixed (nvidia.com/mig-<profile>). Default: mixed when
	// spec.nvidia.mig gives any host a layout, else none.
	MIGStrategy string `yaml:"migStrategy,omitempty" json:"migStrategy,omitempty" jsonschema:"enum=none,enum=single,enum=mixed"`
	// Default is the configuration of nodes without the label; a name in Configs. Default: the
	// MIG strategy alone, no sharing.
	Default string `yaml:"default,omitempty" json:"default,omitempty"`
	// Configs are the configurations by name (a label value).
	Configs map[string]GPUSharingConfig `yaml:"configs,omitempty" json:"configs,omitempty"`
}

// GPUSharingConfig is one device plugin configuration.
type GPUSharingConfig struct {
	// MIGStrategy replaces spec.kubernetes.gpuSharing.migStrategy for these nodes.
	MIGStrategy string `yaml:"migStrategy,omitempty" json:"migStrategy,omitempty" jsonschema:"enum=none,enum=single,enum=mixed"`
	// TimeSlicing advertises each GPU as Replicas that take turns on it (no memory isolation).
	TimeSlicing *GPUReplicas `yaml:"timeSlicing,omitempty" json:"timeSlicing,omitempty"`
	// MPS advertises each GPU as Replicas sharing it through CUDA MPS (memory and compute split
	// evenly); not with TimeSlicing.
	MPS *GPUReplicas `yaml:"mps,omitempty" json:"mps,omitempty"`
}

// GPUReplicas shares devices among Replicas.
type GPUReplicas struct {
	// Replicas each device is advertised as (at least 2).
	Replicas int `yaml:"replicas" json:"replicas"`
	// Resources are the resources shared. Default [nvidia.com/gpu]; with MIG strategy mixed,
	// nvidia.com/mig-<profile> names too.
	Resources []string `yaml:"resources,omitempty" json:"resources,omitempty"`
	// RenameByDefault advertises the shares as <resource>.shared.
	RenameByDefault bool `yaml:"renameByDefault,omitempty" json:"renameByDefault,omitempty"`
	// FailRequestsGreaterThanOne refuses pods asking for more than one share.
	FailRequestsGreaterThanOne bool `yaml:"failRequestsGreaterThanOne,omitempty" json:"failRequestsGreaterThanOne,omitempty"`
}

// KubeletSpec are the kubelet settings gpukit passes on.
type KubeletSpec struct {
	// CgroupDriver: systemd or cgroupfs (hosts whose systemd delegates no controllers). Default systemd.
	CgroupDriver string `yaml:"cgroupDriver,omitempty" json:"cgroupDriver,omitempty" jsonschema:"enum=systemd,enum=cgroupfs"`
	// FailCgroupV1 false lets kubelet 1.35+ start on cgroup v1 hosts. Default true.
	FailCgroupV1 *bool `yaml:"failCgroupV1,omitempty" json:"failCgroupV1,omitempty"`
	// FailSwapOn false lets kubelet start with swap on. Default true (gpukit turns swap off).
	FailSwapOn *bool `yaml:"failSwapOn,omitempty" json:"failSwapOn,omitempty"`
	// ResolvConf is the resolver file (absolute path) pods' DNS forwards to. Default /etc/resolv.conf.
	ResolvConf string `yaml:"resolvConf,omitempty" json:"resolvConf,omitempty"`
	// EvictionHard are the kubelet's hard eviction thresholds by signal (memory.available,
	// nodefs.available, nodefs.inodesFree, imagefs.available, imagefs.inodesFree,
	// containerfs.available, containerfs.inodesFree, pid.available): a percentage ("5%") or a
	// quantity ("500Mi"). Given, they replace the kubelet's defaults, and a signal not named has
	// no threshold. Default: the kubelet's (memory.available 100Mi, nodefs.available 10%,
	// imagefs.available 15%, nodefs.inodesFree 5%): a node whose disk is shared or large (local
	// datasets, checkpoints) may need its own.
	EvictionHard map[string]string `yaml:"evictionHard,omitempty" json:"evictionHard,omitempty"`
}

// KubeProxySpec are the kube-proxy settings gpukit passes on.
type KubeProxySpec struct {
	// Mode: iptables, ipvs or nftables. Default: kube-proxy's (iptables).
	Mode string `yaml:"mode,omitempty" json:"mode,omitempty" jsonschema:"enum=iptables,enum=ipvs,enum=nftables"`
	// ConntrackMaxPerCore sizes nf_conntrack_max; 0 leaves the host's value alone. Default: kube-proxy's (32768).
	ConntrackMaxPerCore *int `yaml:"conntrackMaxPerCore,omitempty" json:"conntrackMaxPerCore,omitempty" jsonschema:"minimum=0,maximum=1048576"`
}

// ContainerdSpec are the containerd settings gpukit writes.
type ContainerdSpec struct {
	// Source: docker (containerd.io from Docker's repository, spec.mirrors.docker replacing it,
	// pinned to spec.versions.containerRuntime) or distribution (the OS's containerd, as it ships
	// it; Debian 12's 1.6 runs Kubernetes up to 1.35). Default docker.
	Source string `yaml:"source,omitempty" json:"source,omitempty" jsonschema:"enum=docker,enum=distribution"`
	// NVIDIARuntime: default (every container on GPU hosts runs through the NVIDIA runtime, what
	// the device plugin expects) or runtimeClass (only pods asking for RuntimeClass nvidia).
	// Default default.
	NVIDIARuntime string `yaml:"nvidiaRuntime,omitempty" json:"nvidiaRuntime,omitempty" jsonschema:"enum=default,enum=runtimeClass"`
	// RestrictOOMScoreAdj keeps containers' OOM score adjustments at or above containerd's own
	// (hosts without CAP_SYS_RESOURCE, such as containers). Default false.
	RestrictOOMScoreAdj bool `yaml:"restrictOOMScoreAdj,omitempty" json:"restrictOOMScoreAdj,omitempty"`
}

// SSH says how to reach and become root on a host. Zero fields inherit from spec.ssh.
type SSH struct {
	// User to log in as. Default root; any other user gets sudo.
	User string `yaml:"user,omitempty" json:"user,omitempty"`
	// Port of the SSH server. Default 22.
	Port int `yaml:"port,omitempty" json:"port,omitempty" jsonschema:"minimum=1,maximum=65535"`
	// KeyFile is a private key; "~" expands to the operator's home directory.
	KeyFile string `yaml:"keyFile,omitempty" json:"keyFile,omitempty"`
	// KeyPassphrase unlocks an encrypted KeyFile.
	KeyPassphrase *SecretRef `yaml:"keyPassphrase,omitempty" json:"keyPassphrase,omitempty"`
	// Agent uses the keys of the running ssh-agent ($SSH_AUTH_SOCK).
	Agent *bool `yaml:"agent,omitempty" json:"agent,omitempty"`
	// Password authentication; a warning is printed because keys are safer.
	Password *SecretRef `yaml:"password,omitempty" json:"password,omitempty"`
	// KnownHostsFile is checked for every host key. Default ~/.ssh/known_hosts.
	KnownHostsFile string `yaml:"knownHostsFile,omitempty" json:"knownHostsFile,omitempty"`
	// Bastion is a jump host every connection goes through.
	Bastion *Bastion `yaml:"bastion,omitempty" json:"bastion,omitempty"`
	// Sudo is used for every command when the user is not root.
	Sudo *Sudo `yaml:"sudo,omitempty" json:"sudo,omitempty"`
	// ConnectTimeout as a Go duration ("10s"). Default 10s.
	ConnectTimeout string `yaml:"connectTimeout,omitempty" json:"connectTimeout,omitempty"`
}

// Bastion is a jump host (ssh -J).
type Bastion struct {
	// Address of the jump host: an IP address or DNS name.
	Address string `yaml:"address" json:"address"`
	// Port of its SSH server. Default 22.
	Port int `yaml:"port,omitempty" json:"port,omitempty" jsonschema:"minimum=1,maximum=65535"`
	// User on the jump host. Default: the host's ssh user.
	User string `yaml:"user,omitempty" json:"user,omitempty"`
	// KeyFile for the jump host. Default: the host's ssh keyFile.
	KeyFile string `yaml:"keyFile,omitempty" json:"keyFile,omitempty"`
	// Password for the jump host (keys are safer).
	Password *SecretRef `yaml:"password,omitempty" json:"password,omitempty"`
}

// Sudo configures privilege escalation for a non-root user.
type Sudo struct {
	// Enabled defaults to true when the user is not root.
	Enabled *bool `yaml:"enabled,omitempty" json:"enabled,omitempty"`
	// Password is fed to sudo on stdin (never on the command line); omit for NOPASSWD.
	Password *SecretRef `yaml:"password,omitempty" json:"password,omitempty"`
}

// SecretRef says where a secret comes from. Exactly one field is set.
type SecretRef struct {
	// Env is the name of an environment variable of the gpukit process.
	Env string `yaml:"env,omitempty" json:"env,omitempty"`
	// File is read and trimmed of one trailing newline.
	File string `yaml:"file,omitempty" json:"file,omitempty"`
	// Value is the secret itself; refused unless spec.allowInlineSecrets is true.
	Value string `yaml:"value,omitempty" json:"value,omitempty"`
}

// Host is one machine, or a range of machines when Name holds "[a:b]".
type Host struct {
	// Name is the host name, a lowercase RFC 1123 label, or a range such as gpu-[001:200].
	Name string `yaml:"name" json:"name"`
	// Address is an IPv4/IPv6 address or DNS name, or a range such as 10.0.1.[1:200]
	// expanded in step with Name. A DNS name is resolved once at the start of a run (the
	// cluster advertises its nodes by IP); behind a bastion, write the IP.
	Address string `yaml:"address" json:"address"`
	// NodeAddress is the IP the cluster knows the host by, when it is not the SSH address:
	// multi-NIC servers with SSH on a management network and cluster traffic on a faster
	// one. kubeadm's advertise address, the kubelet's --node-ip, the pod network's interface
	// (flannel, calico) and swarm's advertise address. An IP address, or a range expanded in
	// step with Name. Default: Address (resolved, for a DNS name).
	NodeAddress string `yaml:"nodeAddress,omitempty" json:"nodeAddress,omitempty"`
	// Roles: control-plane, worker, ingress (kubernetes); manager, worker (swarm).
	Roles []Role `yaml:"roles" json:"roles" jsonschema:"minItems=1"`
	// Labels are node labels (Kubernetes, or Swarm: docker node update --label-add).
	Labels map[string]string `yaml:"labels,omitempty" json:"labels,omitempty"`
	// Taints in kubectl form: key[=value]:Effect.
	Taints []string `yaml:"taints,omitempty" json:"taints,omitempty"`
	// SSH overrides spec.ssh for this host (or range).
	SSH *SSH `yaml:"ssh,omitempty" json:"ssh,omitempty"`
	// CUDAToolkit installs the CUDA toolkit on this host (or range), or not,
	// whatever spec.nvidia.cudaToolkitRoles says.
	CUDAToolkit *bool `yaml:"cudaToolkit,omitempty" json:"cudaToolkit,omitempty"`
	// NvidiaDriver replaces spec.versions.nvidiaDriver on this host (or range): GPUs the
	// cluster's branch no longer drives (Kepler: 470; Maxwell, Pascal, Volta: 580) or does not
	// drive yet.
	NvidiaDriver string `yaml:"nvidiaDriver,omitempty" json:"nvidiaDriver,omitempty"`
	// CUDA replaces spec.versions.cuda on this host (or range): the toolkit its GPUs need (CUDA
	// 13 targets Turing and newer; 12.9 is the last for Maxwell, Pascal and Volta).
	CUDA string `yaml:"cuda,omitempty" json:"cuda,omitempty"`
	// Proxy replaces spec.proxy on this host (or range), as a whole: another proxy, or {} for
	// none (a host with a route of its own).
	Proxy *Proxy `yaml:"proxy,omitempty" json:"proxy,omitempty"`
	// MIG is the MIG layout of this host's (or range's) GPUs, whatever spec.nvidia.mig's rules
	// say: a built-in layout or one of spec.nvidia.mig.layouts.
	MIG string `yaml:"mig,omitempty" json:"mig,omitempty"`
}

// Versions pins what is installed. The NVIDIA driver may be an exact version
// ("580.95.05") or a branch ("580").
type Versions struct {
	// NvidiaDriver is an exact release (580.95.05) or a branch (580). Default 580.95.05.
	NvidiaDriver string `yaml:"nvidiaDriver,omitempty" json:"nvidiaDriver,omitempty"`
	// CUDA toolkit X.Y; it must not need a newer driver than NvidiaDriver. Default 13.0.
	CUDA string `yaml:"cuda,omitempty" json:"cuda,omitempty"`
	// ContainerToolkit is the NVIDIA Container Toolkit X.Y.Z. Default 1.20.0.
	ContainerToolkit string `yaml:"containerToolkit,omitempty" json:"containerToolkit,omitempty"`
	// Kubernetes X.Y.Z, minor 1.34 to 1.37. Default 1.37.2.
	Kubernetes string `yaml:"kubernetes,omitempty" json:"kubernetes,omitempty"`
	// ContainerRuntime is the version of Runtime.
	ContainerRuntime string `yaml:"containerRuntime,omitempty" json:"containerRuntime,omitempty"`
	// Runtime: containerd (kubernetes default) or docker (swarm, required).
	Runtime string `yaml:"runtime,omitempty" json:"runtime,omitempty" jsonschema:"enum=containerd,enum=docker"`
}

// NVIDIA says how the NVIDIA stack is installed; what is installed is in
// spec.versions.
type NVIDIA struct {
	// DriverSource: cuda-repo (NVIDIA's CUDA repository; spec.mirrors.nvidia replaces it) or
	// distribution (the OS's own packages: Debian's nvidia-driver from non-free, Ubuntu's
	// nvidia-driver-NNN-server; versions.nvidiaDriver must name their branch). Default cuda-repo.
	DriverSource string `yaml:"driverSource,omitempty" json:"driverSource,omitempty" jsonschema:"enum=cuda-repo,enum=distribution"`
	// KernelModules: auto (open modules on Turing and newer GPUs, proprietary on older ones,
	// decided from the PCI device ids), open or proprietary. Default auto.
	KernelModules string `yaml:"kernelModules,omitempty" json:"kernelModules,omitempty" jsonschema:"enum=auto,enum=open,enum=proprietary"`
	// SecureBoot: what to do on a host with Secure Boot on, where a module built by DKMS would
	// not load: refuse (the host fails, naming the options), signed (modules the OS vendor signed:
	// Ubuntu's linux-modules-nvidia-*, NVIDIA's precompiled RHEL streams) or mok (DKMS modules
	// signed with a Machine Owner Key the operator enrolls at the console). Default refuse.
	SecureBoot string `yaml:"secureBoot,omitempty" json:"secureBoot,omitempty" jsonschema:"enum=refuse,enum=signed,enum=mok"`
	// CUDAToolkitRoles installs cuda-toolkit-X-Y (versions.cuda) on hosts with these roles; a
	// host's cudaToolkit overrides. Default none: containers bring their own CUDA runtime and
	// need only the driver.
	CUDAToolkitRoles []Role `yaml:"cudaToolkitRoles,omitempty" json:"cudaToolkitRoles,omitempty"`
	// FabricManager: auto (on NVSwitch systems - HGX, DGX - found on the PCI bus), always or
	// never. Default auto.
	FabricManager string `yaml:"fabricManager,omitempty" json:"fabricManager,omitempty" jsonschema:"enum=auto,enum=always,enum=never"`
	// RebootTimeout is how long a host may take to come back from a reboot (servers with many
	// GPUs take minutes to POST), as a Go duration. Default 20m.
	RebootTimeout string `yaml:"rebootTimeout,omitempty" json:"rebootTimeout,omitempty"`
	// RebootPolicy says how a changed driver gets into memory. when-needed: the old modules
	// are unloaded and the new ones loaded, with the host drained, its GPU consumers stopped
	// and nothing holding /dev/nvidia*; the host reboots only when that fails (nouveau loaded,
	// a module in use, the OS asking for a reboot), and gpukit says why. always: every driver
	// change reboots. Default when-needed.
	RebootPolicy string `yaml:"rebootPolicy,omitempty" json:"rebootPolicy,omitempty" jsonschema:"enum=when-needed,enum=always"`
	// MIG partitions MIG-capable GPUs (A100, A30, H100, H200, GH200) into GPU instances.
	// Without it gpukit leaves every GPU's MIG mode and instances as they are.
	MIG MIG `yaml:"mig,omitempty" json:"mig,omitempty"`
}

// MIG is how the GPUs are partitioned. A host's layout is its own (spec.hosts[].mig), else
// the first rule that matches it, else Layout. A layout is a built-in one: all-disabled (MIG
// off), all-enabled (MIG on, no instance), all-balanced (two 1g, one 2g and one 3g instance
// on each GPU, where they exist), all-<profile> (as many instances of one profile as the GPU
// holds, e.g. all-1g.10gb); or one of Layouts. A layout a GPU cannot hold is refused by plan
// and preflight, naming the host and GPU.
type MIG struct {
	// Layout is the layout of every MIG-capable GPU host no rule or host entry names one for.
	// Default none: MIG left alone.
	Layout string `yaml:"layout,omitempty" json:"layout,omitempty"`
	// Rules pick a layout by host labels and GPU model; the first that matches a host wins.
	Rules []MIGRule `yaml:"rules,omitempty" json:"rules,omitempty"`
	// Layouts are the site's own layouts by name (lowercase letters, digits, - and .).
	Layouts map[string][]MIGGroup `yaml:"layouts,omitempty" json:"layouts,omitempty"`
}

// MIGRule gives the hosts it matches a layout.
type MIGRule struct {
	// Labels the host must have (spec.hosts[].labels), all of them.
	Labels map[string]string `yaml:"labels,omitempty" json:"labels,omitempty"`
	// GPU is part of the product name of the host's GPUs, as nvidia-smi writes it (H100,
	// A100-SXM4-40GB); empty: any.
	GPU string `yaml:"gpu,omitempty" json:"gpu,omitempty"`
	// Layout is the layout the matched hosts get.
	Layout string `yaml:"layout" json:"layout"`
}

// MIGGroup is part of a layout: some of a host's GPUs and what they hold.
type MIGGroup struct {
	// GPUs are the GPU indexes (nvidia-smi -i) of this group; empty: every GPU no other group
	// of the layout names.
	GPUs []int `yaml:"gpus,omitempty" json:"gpus,omitempty"`
	// DeviceFilter narrows the group to GPUs of these models: part of the product name
	// (A100-SXM4-80GB) or a PCI device id (20b2, 0x20b2, or mig-parted's 0x20B210DE). Hosts
	// with GPUs of two models (a DGX Station) give each its own group.
	DeviceFilter []string `yaml:"deviceFilter,omitempty" json:"deviceFilter,omitempty"`
	// Enabled is the GPUs' MIG mode. Default true.
	Enabled *bool `yaml:"enabled,omitempty" json:"enabled,omitempty"`
	// Profiles are the GPU instances of each GPU, profile name to count ({3g.40gb: 1,
	// 1g.10gb: 4}), each with one compute instance taking all of it.
	Profiles map[string]int `yaml:"profiles,omitempty" json:"profiles,omitempty"`
}

// Network is the Kubernetes network layout.
type Network struct {
	// PodCIDR is the pod network (or an IPv4,IPv6 pair). Default 10.244.0.0/16.
	PodCIDR string `yaml:"podCIDR,omitempty" json:"podCIDR,omitempty"`
	// ServiceCIDR is the service network (or an IPv4,IPv6 pair). Default 10.96.0.0/12.
	ServiceCIDR string `yaml:"serviceCIDR,omitempty" json:"serviceCIDR,omitempty"`
	// CNI plugin: flannel, calico, cilium (each a Helm release) or none (the site installs its
	// own after init). Default flannel.
	CNI string `yaml:"cni,omitempty" json:"cni,omitempty" jsonschema:"enum=flannel,enum=calico,enum=cilium,enum=none"`
}

// Addons are the platform services deployed on top of the cluster.
type Addons struct {
	// Ingress is the Traefik ingress controller.
	Ingress Ingress `yaml:"ingress,omitempty" json:"ingress,omitempty"`
	// Monitoring is Prometheus, Grafana and the DCGM exporter.
	Monitoring Monitoring `yaml:"monitoring,omitempty" json:"monitoring,omitempty"`
	// Storage is the default StorageClass.
	Storage Storage `yaml:"storage,omitempty" json:"storage,omitempty"`
}

// Ingress is the Traefik ingress controller.
type Ingress struct {
	// Enabled deploys Traefik. Default true.
	Enabled *bool `yaml:"enabled,omitempty" json:"enabled,omitempty"`
	// Domain for ingress hosts; default "<first ingress host address>.nip.io".
	Domain string `yaml:"domain,omitempty" json:"domain,omitempty"`
	// Values are Helm values for the traefik chart, merged over gpukit's.
	Values Values `yaml:"values,omitempty" json:"values,omitempty"`
}

// Monitoring is Prometheus, Grafana and the DCGM exporter.
type Monitoring struct {
	// Enabled deploys the monitoring stack. Default true.
	Enabled *bool `yaml:"enabled,omitempty" json:"enabled,omitempty"`
	// Values are Helm values for the kube-prometheus-stack chart, merged
	// over gpukit's (turn off a component, pin an image, size storage).
	Values Values `yaml:"values,omitempty" json:"values,omitempty"`
	// GPUMetrics is NVIDIA's DCGM exporter.
	GPUMetrics GPUMetrics `yaml:"gpuMetrics,omitempty" json:"gpuMetrics,omitempty"`
}

// GPUMetrics is NVIDIA's DCGM exporter on the GPU nodes.
type GPUMetrics struct {
	// Enabled deploys the exporter when monitoring is on. Default true;
	// false where another one runs (the GPU Operator's): the GPU dashboard
	// reads its metrics all the same.
	Enabled *bool `yaml:"enabled,omitempty" json:"enabled,omitempty"`
	// Values are Helm values for the dcgm-exporter chart, merged over gpukit's.
	Values Values `yaml:"values,omitempty" json:"values,omitempty"`
}

// Values are a chart's Helm values, as in a values file: maps merge key by
// key over gpukit's values, anything else replaces them, null removes one.
type Values map[string]any

// Storage is the default StorageClass.
type Storage struct {
	// Type: local-path (default), nfs or none.
	Type string `yaml:"type,omitempty" json:"type,omitempty" jsonschema:"enum=local-path,enum=nfs,enum=none"`
	// NFS is the export used when Type is nfs.
	NFS *NFS `yaml:"nfs,omitempty" json:"nfs,omitempty"`
	// Values are Helm values for the provisioner's chart, merged over gpukit's.
	Values Values `yaml:"values,omitempty" json:"values,omitempty"`
}

// NFS is an existing NFS export used by the nfs-subdir provisioner.
type NFS struct {
	// Server is the NFS server's IP address or DNS name.
	Server string `yaml:"server" json:"server"`
	// Path is the exported directory, absolute.
	Path string `yaml:"path" json:"path"`
}

// Kubeflow is the optional Kubeflow platform (kubeflow/manifests release).
type Kubeflow struct {
	// Enabled deploys Kubeflow. Default false.
	Enabled bool `yaml:"enabled,omitempty" json:"enabled,omitempty"`
	// Version is a kubeflow/manifests release: v1.9.0, v1.9.1, v1.10.0, v1.10.1,
	// v1.10.2, v1.11.0 or 26.03. Default 26.03.
	Version string `yaml:"version,omitempty" json:"version,omitempty"`
	// Manifests is the release's tree on the machine running gpukit, for
	// air-gapped sites: the tag's source archive (.tar.gz) or a directory,
	// as a clean absolute path. Default: the tag's archive from GitHub.
	Manifests string `yaml:"manifests,omitempty" json:"manifests,omitempty"`
	// RemoteBases is the bundle of the remote bases the release's example
	// references (26.03: argo-workflows, lws, jobset), laid out by URL, a
	// .tar.gz or a directory on the machine running gpukit, as a clean
	// absolute path. Needed offline for releases that reference any.
	RemoteBases string `yaml:"remoteBases,omitempty" json:"remoteBases,omitempty"`
}

// Bundle is an offline bundle and the host that serves it.
type Bundle struct {
	// Dir is the bundle's directory on the machine running gpukit (what `gpukit bundle create`
	// made), as a clean absolute path. It must be complete.
	Dir string `yaml:"dir" json:"dir"`
	// Host is the inventory host that serves it: its package repositories over HTTP on Port,
	// its images as a read-only registry over HTTPS on RegistryPort (gpukit-bundle.service).
	Host string `yaml:"host" json:"host"`
	// Port serves the package repositories. Default 8480.
	Port int `yaml:"port,omitempty" json:"port,omitempty" jsonschema:"minimum=1,maximum=65535"`
	// RegistryPort serves the images. Default 8443.
	RegistryPort int `yaml:"registryPort,omitempty" json:"registryPort,omitempty" jsonschema:"minimum=1,maximum=65535"`
}

// Mirrors replace public sources; each is a base URL (registry: a host[:port][/path]).
type Mirrors struct {
	// NVIDIA replaces the CUDA and container toolkit package repositories.
	NVIDIA string `yaml:"nvidia,omitempty" json:"nvidia,omitempty"`
	// Kubernetes replaces pkgs.k8s.io.
	Kubernetes string `yaml:"kubernetes,omitempty" json:"kubernetes,omitempty"`
	// Docker replaces download.docker.com.
	Docker string `yaml:"docker,omitempty" json:"docker,omitempty"`
	// Charts replaces the Helm chart repositories: one Helm repository (index.yaml) over https
	// holding every chart gpukit installs, an OCI registry (oci://host[:port]/path, the charts
	// pushed below it by `helm push`; on the registry mirror's host it takes its CA and login),
	// or a directory on the machine running gpukit (/path or file:///path) of chart archives
	// named NAME-VERSION.tgz, as `helm pull` saves them.
	Charts string `yaml:"charts,omitempty" json:"charts,omitempty"`
	// Registry holds copies of the public registries' images, each under a path named after its
	// registry (MIRROR/registry.k8s.io/pause:3.10.1, MIRROR/docker.io/flannel/flannel:v0.27.4):
	// containerd on every node pulls those registries' images from it. host[:port][/path];
	// http://host[:port][/path] for one that speaks plain HTTP.
	Registry string `yaml:"registry,omitempty" json:"registry,omitempty"`
	// RegistryCAFile is a PEM file on this machine with the CA certificate(s) that signed the
	// HTTPS registry mirror's certificate, where the hosts do not trust it already: containerd
	// trusts it for the mirror only (certs.d/<mirror>/ca.crt).
	RegistryCAFile string `yaml:"registryCAFile,omitempty" json:"registryCAFile,omitempty"`
	// RegistryLogin logs containerd in to the registry mirror (HTTP basic authentication, sent
	// only to the mirror; hosts.toml files readable by root only).
	RegistryLogin *RegistryLogin `yaml:"registryLogin,omitempty" json:"registryLogin,omitempty"`
	// SigningKeys name the keys of package mirrors re-signed with the site's own key, by full
	// fingerprint (40 hex digits; gpg's spaced form is read too). A host trusts a mirror's key
	// only when its fingerprint is listed: here for a re-signed mirror, else in gpukit's bill of
	// materials (the upstream repository's own key, for a mirror that copies it as it is).
	SigningKeys MirrorKeys `yaml:"signingKeys,omitempty" json:"signingKeys,omitempty"`
}

// RegistryLogin is an account on the registry mirror.
type RegistryLogin struct {
	// Username of the account.
	Username string `yaml:"username" json:"username"`
	// Password (or token) of the account, from an environment variable or a file.
	Password *SecretRef `yaml:"password" json:"password"`
}

// MirrorKeys are the fingerprints of the keys that sign re-signed mirrors,
// one list per package mirror.
type MirrorKeys struct {
	// NVIDIA signs spec.mirrors.nvidia: the CUDA and the container toolkit repositories.
	NVIDIA []string `yaml:"nvidia,omitempty" json:"nvidia,omitempty"`
	// Kubernetes signs spec.mirrors.kubernetes.
	Kubernetes []string `yaml:"kubernetes,omitempty" json:"kubernetes,omitempty"`
	// Docker signs spec.mirrors.docker.
	Docker []string `yaml:"docker,omitempty" json:"docker,omitempty"`
}
