package scripts

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/gpukit/gpukit/manifests"
	"github.com/gpukit/gpukit/pkg/osfamily"
	"github.com/gpukit/gpukit/pkg/ssh"
)

// The Kubernetes layer's scripts (pkg/bootstrap/kubeadm decides, these
// render).
var (
	kubePrepareTemplate  = parse[KubePrepareParams]("kube-prepare.sh")
	kubePackagesTemplate = parse[KubePackagesParams]("kube-packages.sh")
)

// KubePrepareParams choose between preparing and checking.
type KubePrepareParams struct {
	// Check only prints "pending: WHAT" lines for what is not done yet.
	Check bool
}

// Validate has nothing to check.
func (KubePrepareParams) Validate() error { return nil }

// KubePrepare renders the node prerequisites: swap off, the overlay and
// br_netfilter modules, forwarding and bridge sysctls (the same on every
// family); with p.Check, the read of what is pending.
func KubePrepare(p KubePrepareParams) (ssh.Command, error) {
	if p.Check {
		return command("read what the kubelet still lacks", kubePrepareTemplate, p)
	}
	return command("prepare for the kubelet", kubePrepareTemplate, p)
}

// kubeMinorRepo is a pkgs.k8s.io repository: .../core:/stable:/v1.37/deb/
// (or rpm/), of a minor the packages' version belongs to.
var kubeMinorRepo = regexp.MustCompile(`core:/stable:/v1\.([0-9]+)/(deb|rpm)/$`)

// KubePackagesParams install kubeadm, kubelet and kubectl from the
// Kubernetes package repository of their minor (pkgs.k8s.io or a mirror of
// it), pinned and held, and cri-tools at its newest.
type KubePackagesParams struct {
	Family osfamily.Info
	// RepoURL is the minor's repository, ending in "/":
	// https://pkgs.k8s.io/core:/stable:/v1.37/deb/ (rpm/ on dnf hosts).
	RepoURL string
	// Key is the repository's signing key.
	Key manifests.SigningKey
	// Version is the Kubernetes release, 1.37.2: Packages are pinned to it.
	Version string
	// Packages are pinned to Version and held; Extra are held at their newest.
	Packages, Extra []string
}

// Validate checks every value that reaches the script.
func (p KubePackagesParams) Validate() error {
	if err := checkPinned(p.Family, p.Packages, p.Extra); err != nil {
		return err
	}
	if !semver.MatchString(p.Version) {
		return fmt.Errorf("kubernetes version %q: want X.Y.Z", p.Version)
	}
	if err := checkBaseURL("kubernetes repository", p.RepoURL); err != nil {
		return err
	}
	if err := manifests.CheckSigningKey(p.Key); err != nil {
		return fmt.Errorf("kubernetes repository: %w", err)
	}
	m := kubeMinorRepo.FindStringSubmatch(p.RepoURL)
	want := "deb"
	if p.Family.PackageManager == osfamily.Dnf {
		want = "rpm"
	}
	switch {
	case m == nil:
		return fmt.Errorf("kubernetes repository %q: want a minor's repository, .../core:/stable:/vX.Y/%s/", p.RepoURL, want)
	case "1."+m[1] != minorOf(p.Version):
		return fmt.Errorf("kubernetes repository %q is not of %s's minor", p.RepoURL, p.Version)
	case m[2] != want:
		return fmt.Errorf("kubernetes repository %q: %s hosts take the %s/ repository", p.RepoURL, p.Family.Name, want)
	}
	return nil
}

// minorOf is "1.37" of "1.37.2" (validated X.Y.Z).
func minorOf(v string) string {
	return v[:strings.LastIndexByte(v, '.')]
}

// KubePackages renders the Kubernetes packages' install.
func KubePackages(p KubePackagesParams) (ssh.Command, error) {
	return command("install kubeadm, kubelet and kubectl", kubePackagesTemplate, p)
}

var (
	containerdTemplate       = parse[ContainerdParams]("containerd.sh")
	containerdConfigTemplate = parse[BackupParams]("containerd-config.sh")
	kubeStateTemplate        = parse[KubeStateParams]("kube-state.sh")
	kubeadmInitTemplate      = parse[KubeadmParams]("kubeadm-init.sh")
	kubeadmJoinTemplate      = parse[KubeadmParams]("kubeadm-join.sh")
	kubeJoinTokenTemplate    = parse[KubeJoinTokenParams]("kube-join-token.sh")
	kubeAdminConfTemplate    = parse[NoParams]("kube-admin-conf.sh")
	kubeNodesTemplate        = parse[NoParams]("kube-nodes.sh")
	kubeNodesJSONTemplate    = parse[NoParams]("kube-nodes-json.sh")
	kubeNodesRemoveTemplate  = parse[KubeNodesRemoveParams]("kube-nodes-remove.sh")
	kubeResetTemplate        = parse[KubeResetParams]("kube-reset.sh")
)

// containerd sources.
const (
	ContainerdFromDocker       = "docker"       // containerd.io from Docker's repository (or a mirror)
	ContainerdFromDistribution = "distribution" // the OS's containerd
)

// ContainerdParams install containerd and write its configuration.
type ContainerdParams struct {
	Family osfamily.Info
	// Source is ContainerdFromDocker or ContainerdFromDistribution.
	Source string
	// RepoURL is Docker's repository for the family, ending in "/"
	// (ContainerdFromDocker only).
	RepoURL string
	// Key is that repository's signing key.
	Key manifests.SigningKey
	// Version is containerd.io's upstream version (2.3.1); "" for the
	// distribution's.
	Version string
	// Packages are pinned to Version (when set) and held; Extra are held at
	// their newest (the CNI plugins).
	Packages, Extra []string
	// CNIDir is where the distribution's CNI plugins are (/usr/lib/cni).
	CNIDir string
}

// Validate checks every value that reaches the script.
func (p ContainerdParams) Validate() error {
	if err := checkPinned(p.Family, p.Packages, p.Extra); err != nil {
		return err
	}
	if p.Version != "" && !semver.MatchString(p.Version) {
		return fmt.Errorf("containerd version %q: want X.Y.Z", p.Version)
	}
	switch p.Source {
	case ContainerdFromDocker:
		if p.Version == "" {
			return fmt.Errorf("no containerd version for Docker's repository")
		}
		if err := checkBaseURL("docker repository", p.RepoURL); err != nil {
			return err
		}
		if err := manifests.CheckSigningKey(p.Key); err != nil {
			return fmt.Errorf("docker repository: %w", err)
		}
	case ContainerdFromDistribution:
		if p.RepoURL != "" {
			return fmt.Errorf("a repository for the distribution's containerd")
		}
	default:
		return fmt.Errorf("containerd source %q", p.Source)
	}
	if !absPath.MatchString(p.CNIDir) {
		return fmt.Errorf("CNI plugin directory %q: want an absolute path", p.CNIDir)
	}
	return nil
}

// absPath is an absolute path of plain characters.
var absPath = regexp.MustCompile(`^(/[A-Za-z0-9._+-]+)+$`)

// Containerd renders containerd's install.
func Containerd(p ContainerdParams) (ssh.Command, error) {
	return command("install containerd", containerdTemplate, p)
}

// ContainerdConfig renders the write of containerd's configuration:
// config.toml, then each hosts.toml file by path (written in path order).
func ContainerdConfig(p BackupParams, config string, hosts map[string]string) (ssh.Command, error) {
	c, err := command("configure containerd", containerdConfigTemplate, p)
	// put compares with $(cat FILE), which drops trailing newlines, and
	// writes one back.
	c.Args = []string{strings.TrimRight(config, "\n")}
	paths := make([]string, 0, len(hosts))
	for path := range hosts {
		if !strings.HasPrefix(path, "/etc/containerd/certs.d/") || !strings.HasSuffix(path, "/hosts.toml") && !strings.HasSuffix(path, "/ca.crt") {
			return ssh.Command{}, fmt.Errorf("script containerd.sh: %q is not a hosts.toml or ca.crt of /etc/containerd/certs.d", path)
		}
		paths = append(paths, path)
	}
	slices.Sort(paths)
	for _, path := range paths {
		c.Args = append(c.Args, path, strings.TrimRight(hosts[path], "\n"))
	}
	return c, err
}

// KubeStateParams read the Kubernetes layer's state.
type KubeStateParams struct {
	Family osfamily.Info
	// Packages are the packages whose version and hold are read.
	Packages []string
	// KubernetesVersion (v1.37.2) and ImageRepository ("": registry.k8s.io)
	// are what kubeadm is asked the pause image of.
	KubernetesVersion, ImageRepository string
}

var (
	kubeVersion = regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+$`)
	imageRepo   = regexp.MustCompile(`^[a-z0-9.-]+(:[0-9]+)?(/[a-z0-9._-]+)*$`)
)

// Validate checks the package names, version and repository.
func (p KubeStateParams) Validate() error {
	if !kubeVersion.MatchString(p.KubernetesVersion) {
		return fmt.Errorf("kubernetes version %q: want vX.Y.Z", p.KubernetesVersion)
	}
	if p.ImageRepository != "" && !imageRepo.MatchString(p.ImageRepository) {
		return fmt.Errorf("image repository %q", p.ImageRepository)
	}
	return checkPinned(p.Family, p.Packages, nil)
}

// KubeState renders the read of a host's Kubernetes state.
func KubeState(p KubeStateParams) (ssh.Command, error) {
	return command("read the kubernetes state", kubeStateTemplate, p)
}

// KubeadmParams are where kubeadm init or join keeps its configuration and
// output on the host.
type KubeadmParams struct {
	ConfigFile, LogFile string
	// ControlPlane: a join as a control plane (join only).
	ControlPlane bool
}

// Validate checks the paths.
func (p KubeadmParams) Validate() error {
	for _, f := range []string{p.ConfigFile, p.LogFile} {
		if !absPath.MatchString(f) {
			return fmt.Errorf("file %q: want an absolute path", f)
		}
	}
	return nil
}

// KubeadmInit renders kubeadm init with the configuration document config.
func KubeadmInit(p KubeadmParams, config []byte) (ssh.Command, error) {
	c, err := command("kubeadm init", kubeadmInitTemplate, p)
	c.Args = []string{string(config)}
	return c, err
}

// KubeadmJoin renders kubeadm join with the configuration document config
// (it holds secrets: it travels as an argument, on stdin).
func KubeadmJoin(p KubeadmParams, config []byte) (ssh.Command, error) {
	c, err := command("kubeadm join", kubeadmJoinTemplate, p)
	c.Args = []string{string(config)}
	return c, err
}

// KubeJoinTokenParams create a join token on a control plane.
type KubeJoinTokenParams struct {
	// TTL is the token's lifetime (a Go duration kubeadm reads: 15m).
	TTL string
	// UploadCerts re-uploads the control-plane certificates under a key
	// kubeadm makes, printed before the join command.
	UploadCerts bool
}

var ttl = regexp.MustCompile(`^[0-9]+[smh]$`)

// Validate checks the TTL.
func (p KubeJoinTokenParams) Validate() error {
	if !ttl.MatchString(p.TTL) {
		return fmt.Errorf("token TTL %q: want a number of s, m or h", p.TTL)
	}
	return nil
}

// KubeJoinToken renders the creation of a join token; its output, the
// certificate key and the join command, is a secret.
func KubeJoinToken(p KubeJoinTokenParams) (ssh.Command, error) {
	return command("create a join token", kubeJoinTokenTemplate, p)
}

// KubeAdminConf renders the read of the admin kubeconfig (a secret).
func KubeAdminConf() (ssh.Command, error) {
	return command("read the admin kubeconfig", kubeAdminConfTemplate, NoParams{})
}

// KubeResetParams choose between resetting a node and checking what a reset
// would undo.
type KubeResetParams struct {
	// Check only prints "pending: WHAT" lines.
	Check bool
	// BackupDir holds containerd's original config.toml.
	BackupDir string
}

// Validate checks the directory.
func (p KubeResetParams) Validate() error { return BackupParams{BackupDir: p.BackupDir}.Validate() }

// KubeReset renders a node's reset (kubeadm reset, the pod network's
// leftovers, containerd's configuration restored); with p.Check, the read of
// what it would undo.
func KubeReset(p KubeResetParams) (ssh.Command, error) {
	if p.Check {
		return command("read what a reset would undo", kubeResetTemplate, p)
	}
	return command("reset the kubernetes node", kubeResetTemplate, p)
}

// KubeNodes renders the read of the cluster's node names on a control plane.
func KubeNodes() (ssh.Command, error) {
	return command("read the cluster's nodes", kubeNodesTemplate, NoParams{})
}

// KubeNodesRemoveParams drain and delete nodes.
type KubeNodesRemoveParams struct {
	// DrainTimeout bounds each drain (a Go duration kubectl reads: 5m).
	DrainTimeout string
}

// Validate checks the timeout.
func (p KubeNodesRemoveParams) Validate() error {
	if !ttl.MatchString(p.DrainTimeout) {
		return fmt.Errorf("drain timeout %q: want a number of s, m or h", p.DrainTimeout)
	}
	return nil
}

// KubeNodesRemove renders the drain and deletion of the named nodes (they
// travel as arguments).
func KubeNodesRemove(p KubeNodesRemoveParams, nodes []string) (ssh.Command, error) {
	c, err := command("drain and delete nodes", kubeNodesRemoveTemplate, p)
	c.Args = nodes
	return c, err
}

// KubeNodesJSON renders the read of the cluster's nodes as JSON (kubectl get
// nodes -o json) on a control plane.
func KubeNodesJSON() (ssh.Command, error) {
	return command("read the cluster's nodes", kubeNodesJSONTemplate, NoParams{})
}

var kubeUpgradeTemplate = parse[KubeUpgradeParams]("kube-upgrade.sh")

// The steps of gpukit upgrade kubernetes on a host.
const (
	UpgradeVersion = "version" // the API server's version (JSON)
	UpgradePlan    = "plan"    // kubeadm upgrade plan
	UpgradeApply   = "apply"   // kubeadm upgrade apply, on the first control plane
	UpgradeNode    = "node"    // kubeadm upgrade node, on every other node
	UpgradeRestart = "restart" // the kubelet restarted on its new binary
)

// KubeUpgradeParams are one step of a Kubernetes upgrade on a host.
type KubeUpgradeParams struct {
	Step string
	// Version is the release, v1.37.2 (plan, apply).
	Version string
	// IgnorePreflightErrors are kubeadm's checks to pass over.
	IgnorePreflightErrors []string
	// LogFile keeps kubeadm's output (apply, node).
	LogFile string
}

// Validate checks every value that reaches the script.
func (p KubeUpgradeParams) Validate() error {
	switch p.Step {
	case UpgradeVersion, UpgradeRestart:
		return nil
	case UpgradePlan, UpgradeApply, UpgradeNode:
	default:
		return fmt.Errorf("upgrade step %q", p.Step)
	}
	if p.Step != UpgradeNode && (!strings.HasPrefix(p.Version, "v") || !semver.MatchString(strings.TrimPrefix(p.Version, "v"))) {
		return fmt.Errorf("kubernetes version %q: want vX.Y.Z", p.Version)
	}
	if p.Step != UpgradePlan && !filePath.MatchString(p.LogFile) {
		return fmt.Errorf("log file %q", p.LogFile)
	}
	for _, c := range p.IgnorePreflightErrors {
		if !preflightCheck.MatchString(c) {
			return fmt.Errorf("preflight check %q", c)
		}
	}
	return nil
}

// KubeUpgrade returns the command of p's step.
func KubeUpgrade(p KubeUpgradeParams) (ssh.Command, error) {
	name := map[string]string{UpgradeVersion: "read the API server's version", UpgradePlan: "read kubeadm upgrade plan " + p.Version,
		UpgradeApply: "kubeadm upgrade apply " + p.Version, UpgradeNode: "kubeadm upgrade node", UpgradeRestart: "restart the kubelet"}[p.Step]
	return command(name, kubeUpgradeTemplate, p)
}

// preflightCheck is a kubeadm preflight check's name (SystemVerification,
// FileContent--proc-sys-net-bridge-bridge-nf-call-iptables, Port-6443, all).
var preflightCheck = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)
