package kubeadm

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"k8s.io/client-go/kubernetes"

	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/kube"
	"github.com/gpukit/gpukit/pkg/safe"
	"github.com/gpukit/gpukit/pkg/scripts"
)

// ---- kubernetes/prepare

type preparePhase struct{ l *Layer }

func (*preparePhase) Name() string    { return PhasePrepare }
func (*preparePhase) HostLocal() bool { return true }
func (*preparePhase) Title() string {
	return "Prepare the hosts for the kubelet (swap off, kernel modules, sysctls)"
}

func (p *preparePhase) ShouldRun(ctx context.Context, h *engine.Host) (bool, string, error) {
	cmd, err := scripts.KubePrepare(scripts.KubePrepareParams{Check: true})
	if err != nil {
		return false, "", err
	}
	res, err := h.Run(ctx, "read what the kubelet still lacks", cmd)
	if err != nil {
		return false, "", err
	}
	var pending []string
	for _, line := range strings.Split(string(res.Stdout), "\n") {
		if what, ok := strings.CutPrefix(line, "pending: "); ok {
			pending = append(pending, what)
		}
	}
	if len(pending) == 0 {
		return false, "swap off, overlay and br_netfilter loaded, forwarding and bridge sysctls set", nil
	}
	h.Logf("%s: pending: %s", PhasePrepare, strings.Join(pending, "; "))
	return true, "", nil
}

func (p *preparePhase) Run(ctx context.Context, h *engine.Host) error {
	cmd, err := scripts.KubePrepare(scripts.KubePrepareParams{})
	_, err = p.l.apply(ctx, h, "prepare for the kubelet", cmd, err)
	return err
}

// ---- kubernetes/packages

type packagesPhase struct{ l *Layer }

func (*packagesPhase) Name() string    { return PhasePackages }
func (*packagesPhase) HostLocal() bool { return true }
func (*packagesPhase) Title() string {
	return "Install kubeadm, kubelet and kubectl, pinned and held"
}

func (p *packagesPhase) pending(ctx context.Context, h *engine.Host) (scripts.KubePackagesParams, string, error) {
	pk, s, why, err := p.l.kubePackages(ctx, h, kubePackages, kubeExtra)
	if err == nil && why == "" && s.KubeletEnabled != "enabled" {
		why = "the kubelet is not enabled"
	}
	return pk, why, err
}

// kubePackages are h's Kubernetes packages pinned (at the inventory's
// release, from its minor's repository) and extra, with h's state and
// what keeps them from being installed and held ("": nothing).
func (l *Layer) kubePackages(ctx context.Context, h *engine.Host, pinned, extra []string) (scripts.KubePackagesParams, *State, string, error) {
	hi, err := l.decide(ctx, h)
	if err != nil {
		return scripts.KubePackagesParams{}, nil, "", err
	}
	s, err := l.state(ctx, h)
	if err != nil {
		return scripts.KubePackagesParams{}, nil, "", err
	}
	pk := hi.packages
	pk.Packages, pk.Extra = pinned, extra
	return pk, s, pendingPackages(s, pk.Version, pinned, extra), nil
}

func (p *packagesPhase) ShouldRun(ctx context.Context, h *engine.Host) (bool, string, error) {
	pk, why, err := p.pending(ctx, h)
	if err != nil || why != "" {
		if why != "" {
			h.Logf("%s: %s", PhasePackages, why)
		}
		return why != "", "", err
	}
	return false, "kubeadm, kubelet and kubectl " + pk.Version + " installed and held", nil
}

func (p *packagesPhase) Run(ctx context.Context, h *engine.Host) error {
	pk, _, err := p.pending(ctx, h)
	if err != nil {
		return err
	}
	cmd, err := scripts.KubePackages(pk)
	_, err = p.l.apply(ctx, h, "install kubeadm, kubelet and kubectl "+pk.Version+" from "+pk.RepoURL, cmd, err)
	return err
}

// ---- kubernetes/containerd

type containerdPhase struct{ l *Layer }

func (*containerdPhase) Name() string    { return PhaseContainerd }
func (*containerdPhase) HostLocal() bool { return true }
func (*containerdPhase) Title() string {
	return "Install and configure containerd (CRI, cgroups, sandbox image, NVIDIA runtime, registry mirror)"
}

// containerdWant is what the phase found and wants on a host.
type containerdWant struct {
	params scripts.ContainerdParams
	// install says why the packages must be installed ("": they are).
	install string
	// config and hosts are the files to write; nil config: containerd is
	// not installed yet, so its major (and the file) is not known.
	config []byte
	hosts  map[string]string
	// reconfigure says why the configuration must be written ("": as wanted).
	reconfigure string
}

func (p *containerdPhase) want(ctx context.Context, h *engine.Host) (*containerdWant, error) {
	hi, err := p.l.decide(ctx, h)
	if err != nil {
		return nil, err
	}
	s, err := p.l.state(ctx, h)
	if err != nil {
		return nil, err
	}
	w := &containerdWant{params: hi.containerd}
	w.install = pendingPackages(s, w.params.Version, w.params.Packages, w.params.Extra)
	if w.install == "" && len(s.CNIMissing) > 0 {
		w.install = "/opt/cni/bin lacks " + strings.Join(s.CNIMissing, ", ")
	}
	if s.ContainerdVersion == "" {
		if w.install == "" {
			w.install = "containerd does not answer"
		}
		return w, nil
	}
	if s.PauseImage == "" {
		if h.DryRun() {
			return w, nil
		}
		return nil, fmt.Errorf("kubeadm names no pause image: %s must install kubeadm first", PhasePackages)
	}
	major := ContainerdMajor(s.ContainerdVersion)
	if major == 1 && minorOf(p.l.cluster.Version) >= 36 {
		// kubelet 1.36 dropped containerd 1.x.
		return nil, fmt.Errorf("containerd %s cannot run Kubernetes %s (1.36 and newer need containerd 2): take containerd from Docker's repository (spec.kubernetes.containerd.source: docker) or Kubernetes 1.35", s.ContainerdVersion, p.l.cluster.Version)
	}
	k := &p.l.inv.Cluster.Spec.Kubernetes
	w.config, err = ContainerdConfig(s.Files[ContainerdConfigFile], major, ContainerdSettings{
		SandboxImage:        s.PauseImage,
		SystemdCgroup:       k.Kubelet.CgroupDriver != "cgroupfs",
		RestrictOOMScoreAdj: k.Containerd.RestrictOOMScoreAdj,
		NVIDIA:              hasGPUs(h.Facts),
		NVIDIADefault:       k.Containerd.NVIDIARuntime != inventory.NVIDIARuntimeClass,
	})
	if err != nil {
		return nil, err
	}
	w.hosts = map[string]string{}
	if m, ok := p.l.inv.RegistryMirror(); ok {
		w.hosts = HostsFiles(m)
	}
	switch {
	case !bytes.Equal(bytes.TrimRight(s.Files[ContainerdConfigFile], "\n"), bytes.TrimRight(w.config, "\n")):
		w.reconfigure = ContainerdConfigFile + " is not as wanted"
	case s.ContainerdActive != "active":
		w.reconfigure = "containerd is " + s.ContainerdActive
	}
	for path, content := range s.Files {
		if path == ContainerdConfigFile || w.reconfigure != "" {
			continue
		}
		want, ok := w.hosts[path]
		switch {
		case !ok && bytes.HasPrefix(content, []byte("# written by gpukit")):
			w.reconfigure = path + " is no longer wanted"
		case ok && strings.TrimRight(string(content), "\n") != strings.TrimRight(want, "\n"):
			w.reconfigure = path + " is not as wanted"
		}
	}
	for path := range w.hosts {
		if _, ok := s.Files[path]; !ok && w.reconfigure == "" {
			w.reconfigure = path + " is missing"
		}
	}
	return w, nil
}

// minorOf is 37 of v1.37.2.
func minorOf(version string) int {
	_, rest, _ := strings.Cut(version, ".")
	minor, _, _ := strings.Cut(rest, ".")
	n := 0
	for _, r := range minor {
		n = n*10 + int(r-'0')
	}
	return n
}

func (p *containerdPhase) ShouldRun(ctx context.Context, h *engine.Host) (bool, string, error) {
	w, err := p.want(ctx, h)
	if err != nil {
		return false, "", err
	}
	for _, why := range []string{w.install, w.reconfigure} {
		if why != "" {
			h.Logf("%s: %s", PhaseContainerd, why)
		}
	}
	if w.install != "" || w.reconfigure != "" || w.config == nil {
		return true, "", nil
	}
	s, _ := p.l.state(ctx, h)
	runtime := "runc"
	if hasGPUs(h.Facts) && p.l.inv.Cluster.Spec.Kubernetes.Containerd.NVIDIARuntime != inventory.NVIDIARuntimeClass {
		runtime = kube.NVIDIARuntimeName
	}
	return false, fmt.Sprintf("containerd %s installed, held and configured (default runtime %s)", s.ContainerdVersion, runtime), nil
}

func (p *containerdPhase) Run(ctx context.Context, h *engine.Host) error {
	w, err := p.want(ctx, h)
	if err != nil {
		return err
	}
	if w.install != "" {
		what := "containerd (the distribution's)"
		if w.params.Source == scripts.ContainerdFromDocker {
			what = "containerd.io " + w.params.Version + " from " + w.params.RepoURL
		}
		cmd, err := scripts.Containerd(w.params)
		if _, err := p.l.apply(ctx, h, "install "+what, cmd, err); err != nil {
			return err
		}
		if h.DryRun() {
			h.Logf("%s: containerd's configuration is rendered from the installed containerd", PhaseContainerd)
			return nil
		}
		if w, err = p.want(ctx, h); err != nil {
			return err
		}
	}
	if w.config == nil {
		if h.DryRun() {
			return nil
		}
		return fmt.Errorf("containerd is installed but does not say its version")
	}
	if w.reconfigure == "" {
		return nil
	}
	cmd, err := scripts.ContainerdConfig(scripts.BackupParams{BackupDir: BackupDir}, string(w.config), w.hosts)
	_, err = p.l.apply(ctx, h, fmt.Sprintf("configure containerd (%s, %d registry mirror file(s))", ContainerdConfigFile, len(w.hosts)), cmd, err)
	return err
}

// ---- kubernetes/init

type initPhase struct{ l *Layer }

func (*initPhase) Name() string { return PhaseInit }
func (*initPhase) Title() string {
	return "Create the cluster on the first control plane (kubeadm init)"
}

func (p *initPhase) Targets(hosts []*engine.Host) []*engine.Host {
	return firstControlPlaneIn(p.l.inv, hosts)
}

// server is the API's URL as the nodes' kubeconfigs name it.
func (l *Layer) server() string { return "https://" + l.cluster.Endpoint }

// ours says a kubelet talking to server is a node of this cluster: its
// endpoint, or on a control plane that joined, its own API server (kubeadm
// points a joining control plane's kubelet at its local API endpoint).
func (l *Layer) ours(h *engine.Host, server string) bool {
	return server == l.server() || h.Machine.HasRole(inventory.RoleControlPlane) &&
		server == "https://"+net.JoinHostPort(NodeOf(l.inv, h.Machine).Address, strconv.Itoa(APIServerPort))
}

func (p *initPhase) ShouldRun(ctx context.Context, h *engine.Host) (bool, string, error) {
	s, err := p.l.state(ctx, h)
	if err != nil {
		return false, "", err
	}
	switch {
	case s.KubeletServer == "":
		return true, "", nil
	case !p.l.ours(h, s.KubeletServer):
		return false, "", fmt.Errorf("%s belongs to another cluster (its kubelet's API is %s, this cluster's %s); reset it first (gpukit reset --hosts %s)", h.Name(), s.KubeletServer, p.l.server(), h.Name())
	case !s.APIServer:
		return false, "", fmt.Errorf("%s is a worker of the cluster, not its control plane; reset it first (gpukit reset --hosts %s)", h.Name(), h.Name())
	}
	return false, "control plane of the cluster (API " + p.l.server() + ")", nil
}

func (p *initPhase) Run(ctx context.Context, h *engine.Host) error {
	config, err := InitConfig(p.l.cluster, NodeOf(p.l.inv, h.Machine))
	if err != nil {
		return err
	}
	cmd, err := scripts.KubeadmInit(scripts.KubeadmParams{ConfigFile: kubeadmDir + "/kubeadm-init.yaml", LogFile: logDir + "/kubeadm-init.log"}, config)
	_, err = p.l.apply(ctx, h, "kubeadm init (Kubernetes "+p.l.cluster.Version+", API "+p.l.cluster.Endpoint+")", cmd, err)
	return err
}

// ---- kubernetes/join-control-planes, kubernetes/join-workers

type joinPhase struct {
	l             *Layer
	controlPlanes bool
	// set by Prepare
	join Join
}

func (p *joinPhase) Name() string {
	if p.controlPlanes {
		return PhaseJoinControlPlanes
	}
	return PhaseJoinWorkers
}

func (p *joinPhase) Title() string {
	if p.controlPlanes {
		return "Join the other control planes, one at a time"
	}
	return "Join the workers"
}

// MaxParallel: a control plane joining adds an etcd member; one at a time
// keeps the quorum safe and each join confirmed before the next.
func (p *joinPhase) MaxParallel() int {
	if p.controlPlanes {
		return 1
	}
	return 0
}

func (p *joinPhase) Targets(hosts []*engine.Host) []*engine.Host {
	first, _ := FirstControlPlane(p.l.inv)
	var out []*engine.Host
	for _, h := range hosts {
		if h.Name() != first.Name && h.Machine.HasRole(inventory.RoleControlPlane) == p.controlPlanes {
			out = append(out, h)
		}
	}
	return out
}

// Prepare creates a bootstrap token (and, for control planes, uploads the
// certificates anew under a key made for this run) on the first control
// plane, once, when a target has not joined: a write there, so the first
// control plane counts as changed and a dry-run does neither. Both are
// secrets of the run from then on: redacted wherever they could appear.
func (p *joinPhase) Prepare(ctx context.Context, all, targets []*engine.Host) error {
	first := firstControlPlaneIn(p.l.inv, all)
	if len(first) == 0 {
		m, _ := FirstControlPlane(p.l.inv)
		return fmt.Errorf("the first control plane %s is not ready (it failed or is not part of this run): the others join through it", m.Name)
	}
	fm := first[0]
	// Every target's state, read side by side (a few at a time).
	var (
		wg      sync.WaitGroup
		sem     = make(chan struct{}, 32)
		mu      sync.Mutex
		needed  bool
		lastErr error
	)
	for _, t := range targets {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			var s *State
			err := safe.Call(func() (err error) { s, err = p.l.state(ctx, t); return err })
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				lastErr = err
			} else if s.KubeletServer == "" {
				needed = true
			}
		})
	}
	wg.Wait()
	if !needed {
		return lastErr
	}
	if fm.DryRun() {
		// A token and a certificate upload are writes to the cluster (a
		// credential that lives for joinTokenTTL, secrets re-encrypted in
		// kube-system): a plan shows stand-ins, even where the cluster exists.
		p.join = Join{Token: "<join token of " + fm.Name() + ">", CACertHashes: []string{"<CA hash of " + fm.Name() + ">"}}
		if p.controlPlanes {
			p.join.CertificateKey = "<certificate key of this run>"
		}
		return nil
	}
	cmd, err := scripts.KubeJoinToken(scripts.KubeJoinTokenParams{TTL: joinTokenTTL, UploadCerts: p.controlPlanes})
	if err != nil {
		return err
	}
	res, err := fm.Apply(ctx, "create a join token", cmd, engine.SecretOutput())
	if err != nil {
		return err
	}
	j, err := parseJoinCommand(string(res.Stdout), p.controlPlanes)
	if err != nil {
		return fmt.Errorf("%s: %w", fm.Name(), err)
	}
	fm.AddSecret(j.Token, j.CertificateKey)
	p.join = j
	return nil
}

// certificateKey is kubeadm's: 32 bytes of AES key, in hex.
var certificateKey = regexp.MustCompile(`^[0-9a-f]{64}$`)

// parseJoinCommand reads kube-join-token.sh's output: certificate-key=KEY
// when the certificates were uploaded, then `kubeadm token create
// --print-join-command`'s kubeadm join HOST:PORT --token T
// --discovery-token-ca-cert-hash sha256:H.
func parseJoinCommand(out string, withKey bool) (Join, error) {
	var j Join
	f := strings.Fields(out)
	for i := range f {
		if k, ok := strings.CutPrefix(f[i], "certificate-key="); ok {
			j.CertificateKey = k
		}
		if i+1 == len(f) {
			break
		}
		switch f[i] {
		case "--token":
			j.Token = f[i+1]
		case "--discovery-token-ca-cert-hash":
			j.CACertHashes = append(j.CACertHashes, f[i+1])
		}
	}
	switch {
	case j.Token == "" || len(j.CACertHashes) == 0:
		return Join{}, fmt.Errorf("kubeadm printed no join command with a token and a CA hash")
	case withKey && !certificateKey.MatchString(j.CertificateKey):
		return Join{}, fmt.Errorf("kubeadm init phase upload-certs printed no certificate key (64 hex digits) on its last line")
	case !withKey:
		j.CertificateKey = ""
	}
	return j, nil
}

func (p *joinPhase) ShouldRun(ctx context.Context, h *engine.Host) (bool, string, error) {
	s, err := p.l.state(ctx, h)
	if err != nil {
		return false, "", err
	}
	switch {
	case s.KubeletServer == "":
		return true, "", nil
	case !p.l.ours(h, s.KubeletServer):
		return false, "", fmt.Errorf("%s belongs to another cluster (its kubelet's API is %s, this cluster's %s); reset it first (gpukit reset --hosts %s)", h.Name(), s.KubeletServer, p.l.server(), h.Name())
	case p.controlPlanes && !s.APIServer:
		return false, "", fmt.Errorf("%s joined as a worker; the inventory makes it a control plane: reset it first (gpukit reset --hosts %s)", h.Name(), h.Name())
	case !p.controlPlanes && s.APIServer:
		return false, "", fmt.Errorf("%s runs a control plane; the inventory makes it a worker: reset it first (gpukit reset --hosts %s)", h.Name(), h.Name())
	}
	return false, "node of the cluster (API " + p.l.server() + ")", nil
}

func (p *joinPhase) Run(ctx context.Context, h *engine.Host) error {
	config, err := JoinConfig(p.l.cluster, NodeOf(p.l.inv, h.Machine), p.join)
	if err != nil {
		return err
	}
	cmd, err := scripts.KubeadmJoin(scripts.KubeadmParams{ConfigFile: kubeadmDir + "/kubeadm-join.yaml", LogFile: logDir + "/kubeadm-join.log", ControlPlane: p.controlPlanes}, config)
	role := "worker"
	if p.controlPlanes {
		role = "control plane"
	}
	_, err = p.l.apply(ctx, h, "kubeadm join as a "+role+" through "+p.l.cluster.Endpoint, cmd, err)
	return err
}

// ---- kubernetes/kubeconfig

type kubeconfigPhase struct{ l *Layer }

func (*kubeconfigPhase) Name() string  { return PhaseKubeconfig }
func (*kubeconfigPhase) Title() string { return "Fetch the cluster's admin kubeconfig" }

func (p *kubeconfigPhase) Targets(hosts []*engine.Host) []*engine.Host {
	return firstControlPlaneIn(p.l.inv, hosts)
}

// ShouldRun reads the kubeconfig: a read, which changes nothing on the host
// (the command writes it locally after the run).
func (p *kubeconfigPhase) ShouldRun(ctx context.Context, h *engine.Host) (bool, string, error) {
	kc, err := p.l.adminKubeconfig(ctx, h)
	if err != nil {
		return false, "", err
	}
	if kc == nil {
		return false, "the admin kubeconfig is fetched once the cluster exists", nil
	}
	return false, "admin kubeconfig fetched (API " + p.l.server() + ")", nil
}

// adminKubeconfig reads the admin kubeconfig from h, the first control
// plane, once a run; nil in a dry-run before the cluster exists.
func (l *Layer) adminKubeconfig(ctx context.Context, h *engine.Host) ([]byte, error) {
	if kc := l.Kubeconfig(); kc != nil {
		return kc, nil
	}
	s, err := l.state(ctx, h)
	if err != nil {
		return nil, err
	}
	if !s.APIServer {
		if h.DryRun() {
			return nil, nil
		}
		return nil, fmt.Errorf("%s runs no control plane: %s did not create the cluster", h.Name(), PhaseInit)
	}
	cmd, err := scripts.KubeAdminConf()
	if err != nil {
		return nil, err
	}
	res, err := h.Run(ctx, "read the admin kubeconfig", cmd, engine.SecretOutput())
	if err != nil {
		return nil, err
	}
	if !bytes.Contains(res.Stdout, []byte("server: "+l.server())) {
		return nil, fmt.Errorf("the admin kubeconfig of %s does not name the API %s", h.Name(), l.server())
	}
	l.mu.Lock()
	l.kubeconfig = res.Stdout
	l.mu.Unlock()
	return res.Stdout, nil
}

// Client is the cluster's API client, reached through h's connection (h
// is the first control plane that answers) with the admin kubeconfig read
// from it: made once a run (kube.Tunnel), so that every phase that uses the
// API - the layer's, the platform's, the DCGM exporters' reading - shares
// its connections; nil in a dry-run before the cluster exists.
func (l *Layer) Client(ctx context.Context, h kube.Host) (*kube.Client, error) {
	return l.api.Client(ctx, h)
}

// client is the clientset of Client (nil in a dry-run before the cluster
// exists).
func (l *Layer) client(ctx context.Context, h kube.Host) (kubernetes.Interface, error) {
	c, err := l.Client(ctx, h)
	if err != nil || c == nil {
		return nil, err
	}
	return c.Clientset, nil
}

func (p *kubeconfigPhase) Run(context.Context, *engine.Host) error { return nil }
