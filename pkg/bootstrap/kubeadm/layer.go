package kubeadm

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/gpukit/gpukit/manifests"
	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/facts"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/kube"
	"github.com/gpukit/gpukit/pkg/osfamily"
	"github.com/gpukit/gpukit/pkg/probe"
	"github.com/gpukit/gpukit/pkg/scripts"
	"github.com/gpukit/gpukit/pkg/ssh"
)

// Phase names, stable for --only-phases / --skip-phases, events and logs.
const (
	PhasePrepare            = "kubernetes/prepare"
	PhasePackages           = "kubernetes/packages"
	PhaseContainerd         = "kubernetes/containerd"
	PhaseInit               = "kubernetes/init"
	PhaseJoinControlPlanes  = "kubernetes/join-control-planes"
	PhaseJoinWorkers        = "kubernetes/join-workers"
	PhaseKubeconfig         = "kubernetes/kubeconfig"
	DefaultPackagesURL      = "https://pkgs.k8s.io/"
	DefaultDockerURL        = "https://download.docker.com/"
	kubeadmDir              = "/etc/kubernetes/gpukit"
	logDir                  = "/var/log/gpukit"
	joinTokenTTL            = "15m"
	initTokenTTL            = "15m"
	distributionContainerd  = "containerd"
	dockerContainerdPackage = "containerd.io"
)

// kubePackages are pinned to the Kubernetes version; cri-tools (crictl,
// which kubeadm uses) is held at its newest.
var (
	kubePackages = []string{"kubeadm", "kubelet", "kubectl"}
	kubeExtra    = []string{"cri-tools"}
)

// Layer is the Kubernetes part of one run. Its phases share what they
// learned about each host.
type Layer struct {
	inv     *inventory.Inventory
	cluster Cluster

	hosts engine.PerHost[hostInfo]

	mu         sync.Mutex // guards kubeconfig and nodes
	kubeconfig []byte
	nodes      []NodeStatus // status: what the control plane listed
	// api is the cluster's API through the first control plane, its
	// client made from kubeconfig once (Client)
	api kube.Tunnel
}

// hostInfo is one host's share; only the goroutine working on the host
// writes it (phases of a run are separated by waits).
type hostInfo struct {
	decided    bool
	packages   scripts.KubePackagesParams
	containerd scripts.ContainerdParams
	err        error
	state      *State // nil: not read yet, or stale after a change
}

// New returns the layer for inv.
func New(inv *inventory.Inventory) *Layer {
	l := &Layer{inv: inv, cluster: ClusterOf(inv)}
	l.api.Fetch = func(ctx context.Context, h kube.Host) ([]byte, error) {
		eh, ok := h.(*engine.Host)
		if !ok { // a phase of this module passed something else
			return nil, fmt.Errorf("the admin kubeconfig is read through a host of the run, not a %T", h)
		}
		return l.adminKubeconfig(ctx, eh)
	}
	return l
}

var _ kube.API = (*Layer)(nil)

// Kubeconfig is the cluster's admin kubeconfig, once the kubeconfig phase
// read it (nil before). It is a secret.
func (l *Layer) Kubeconfig() []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.kubeconfig
}

// decide works out once per host where its packages come from.
func (l *Layer) decide(ctx context.Context, h *engine.Host) (*hostInfo, error) {
	hi := l.hosts.Of(h.Name())
	if hi.decided {
		return hi, hi.err
	}
	f, err := probe.Ensure(ctx, h)
	if err != nil {
		return nil, err
	}
	hi.packages, hi.containerd, hi.err = Sources(l.inv, f)
	hi.decided = true
	return hi, hi.err
}

// Sources decides where a host's Kubernetes packages and containerd come
// from: the minor's pkgs.k8s.io repository (spec.mirrors.kubernetes replacing
// https://pkgs.k8s.io/), and containerd.io from Docker's repository
// (spec.mirrors.docker) or the distribution's containerd; the CNI plugins
// from the distribution.
func Sources(inv *inventory.Inventory, f *facts.Facts) (scripts.KubePackagesParams, scripts.ContainerdParams, error) {
	fam, err := f.OS.Family()
	if err != nil {
		return scripts.KubePackagesParams{}, scripts.ContainerdParams{}, err
	}
	s := &inv.Cluster.Spec
	v := s.Versions.Kubernetes
	kind, cniDir := "deb", "/usr/lib/cni"
	if fam.PackageManager == osfamily.Dnf {
		kind, cniDir = "rpm", "/usr/libexec/cni"
	}
	pk := scripts.KubePackagesParams{
		Family: fam, Version: v, Packages: kubePackages, Extra: kubeExtra,
		RepoURL: withSlash(cmp.Or(s.Mirrors.Kubernetes, DefaultPackagesURL)) + "core:/stable:/v" + v[:strings.LastIndexByte(v, '.')] + "/" + kind + "/",
		Key:     s.Mirrors.SigningKey(manifests.RepoKubernetes, string(fam.PackageManager)),
	}
	ct := scripts.ContainerdParams{Family: fam, CNIDir: cniDir, Extra: []string{"containernetworking-plugins"}}
	if s.Kubernetes.Containerd.Source == inventory.ContainerdFromDistribution {
		ct.Source, ct.Packages = scripts.ContainerdFromDistribution, []string{distributionContainerd}
	} else {
		dir := fam.IDs[0]
		if fam.PackageManager == osfamily.Dnf {
			dir = "rhel"
		}
		ct.Source, ct.Packages = scripts.ContainerdFromDocker, []string{dockerContainerdPackage}
		ct.Version = cmp.Or(s.Versions.ContainerRuntime, inventory.DefaultContainerdVersion)
		ct.RepoURL = withSlash(cmp.Or(s.Mirrors.Docker, DefaultDockerURL)) + "linux/" + dir + "/"
		ct.Key = s.Mirrors.SigningKey(manifests.RepoDocker, string(fam.PackageManager))
	}
	return pk, ct, nil
}

func withSlash(s string) string {
	if strings.HasSuffix(s, "/") {
		return s
	}
	return s + "/"
}

// state returns the host's Kubernetes state, read once and again after
// every change the layer made.
func (l *Layer) state(ctx context.Context, h *engine.Host) (*State, error) {
	hi, err := l.decide(ctx, h)
	if err != nil {
		return nil, err
	}
	if hi.state != nil {
		return hi.state, nil
	}
	pkgs := append(append(append(append([]string{}, hi.packages.Packages...), hi.packages.Extra...), hi.containerd.Packages...), hi.containerd.Extra...)
	cmd, err := scripts.KubeState(scripts.KubeStateParams{Family: hi.packages.Family, Packages: pkgs,
		KubernetesVersion: l.cluster.Version, ImageRepository: l.cluster.ImageRepository})
	if err != nil {
		return nil, err
	}
	// The output holds containerd's files, which may log in to registries:
	// kept out of events and logs, their logins registered as secrets
	// before any plan or write shows those files.
	res, err := h.Run(ctx, "read the kubernetes state", cmd, engine.SecretOutput())
	if err != nil {
		return nil, err
	}
	s, err := ParseState(res.Stdout)
	if err != nil {
		return nil, err
	}
	if creds := s.Credentials(); len(creds) > 0 {
		h.AddSecret(creds...)
		h.Logf("registry logins found in %s (%d values), kept out of output, logs and plans", strings.Join(s.CredentialFiles(), ", "), len(creds))
	}
	hi.state = s
	return s, nil
}

// apply runs a write (or records it, in dry-run) and marks the state stale.
func (l *Layer) apply(ctx context.Context, h *engine.Host, step string, cmd ssh.Command, err error, opts ...engine.StepOption) (ssh.Result, error) {
	if err != nil {
		return ssh.Result{}, err
	}
	res, err := h.Apply(ctx, step, cmd, opts...)
	l.hosts.Of(h.Name()).state = nil
	return res, err
}

// pendingPackages says what is missing for pinned to be installed at
// version (when set) and held, and extra held, or "" when they are.
func pendingPackages(s *State, version string, pinned, extra []string) string {
	for i, name := range append(append([]string{}, pinned...), extra...) {
		p, ok := s.Packages[name]
		switch {
		case !ok:
			return name + " is not installed"
		case i < len(pinned) && version != "" && !osfamily.UpstreamMatches(p.Version, version):
			return fmt.Sprintf("%s is %s, not %s", name, p.Version, version)
		case !p.Held:
			return name + " is not held"
		}
	}
	return ""
}

// FirstControlPlane is the cluster's first control plane: the first host
// with the control-plane role, in inventory order. It runs kubeadm init and
// lets the others join.
func FirstControlPlane(inv *inventory.Inventory) (inventory.Machine, bool) {
	for _, m := range inv.Machines {
		if m.HasRole(inventory.RoleControlPlane) {
			return m, true
		}
	}
	return inventory.Machine{}, false
}

// firstControlPlaneIn is the first control plane among hosts, if it is one
// of them.
func firstControlPlaneIn(inv *inventory.Inventory, hosts []*engine.Host) []*engine.Host {
	m, ok := FirstControlPlane(inv)
	for _, h := range hosts {
		if ok && h.Name() == m.Name {
			return []*engine.Host{h}
		}
	}
	return nil
}

// hasGPUs: the host has NVIDIA GPUs (listed by the driver or on the PCI
// bus), so the NVIDIA phases installed the container toolkit there.
func hasGPUs(f *facts.Facts) bool {
	return f != nil && (len(f.GPUs) > 0 || len(f.PCIGPUs) > 0)
}

// The layer's phases, in the order `gpukit init` lists them (internal/flow).
func (l *Layer) Prepare() engine.Phase           { return &preparePhase{l} }
func (l *Layer) Packages() engine.Phase          { return &packagesPhase{l} }
func (l *Layer) Containerd() engine.Phase        { return &containerdPhase{l} }
func (l *Layer) Init() engine.Phase              { return &initPhase{l} }
func (l *Layer) JoinControlPlanes() engine.Phase { return &joinPhase{l: l, controlPlanes: true} }
func (l *Layer) JoinWorkers() engine.Phase       { return &joinPhase{l: l} }
func (l *Layer) FetchKubeconfig() engine.Phase   { return &kubeconfigPhase{l} }
