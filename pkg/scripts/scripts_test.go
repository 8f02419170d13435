package scripts

import (
	"io/fs"
	"path"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gpukit/gpukit/manifests"
	"github.com/gpukit/gpukit/pkg/facts"
	"github.com/gpukit/gpukit/pkg/osfamily"
	"github.com/gpukit/gpukit/pkg/ssh"
	"github.com/gpukit/gpukit/test/golden"
	"github.com/gpukit/gpukit/test/shellcheck"
)

// anyFamily names the golden file of a script that is the same on every
// OS family (it renders nothing family-specific).
const anyFamily = "any"

// testBundleHost are a bundle host's paths as gpukit's phases give them.
func testBundleHost(incoming, files bool) BundleHostParams {
	p := BundleHostParams{Dir: "/var/lib/gpukit/bundle", Binary: "/usr/local/lib/gpukit/gpukit", Cert: "/etc/gpukit/bundle/registry.pem",
		Key: "/etc/gpukit/bundle/registry-key.pem", Unit: "/etc/systemd/system/gpukit-bundle.service", Port: 8480, RegistryPort: 8443, Files: files}
	if incoming {
		p.Incoming, p.Restart = "/var/lib/gpukit/bundle.incoming.tar", true
	}
	return p
}

// golden is one rendered script: its template, the family it was rendered
// for (and a variant name when one family has several), and how.
type goldenCase struct {
	template string
	family   string
	variant  string
	render   func() (ssh.Command, error)
}

// cases lists every script with the parameters of its golden files: one per
// OS family for scripts that differ per family.
func cases() []goldenCase {
	out := []goldenCase{
		{probeTemplate.name, anyFamily, "", func() (ssh.Command, error) {
			return Probe(ProbeParams{GPUFields: facts.GPUQueryFields()})
		}},
		{nvidiaStateTemplate.name, anyFamily, "", func() (ssh.Command, error) {
			return NVIDIAState(NVIDIAStateParams{GPUFields: facts.GPUQueryFields()})
		}},
		{rebootTemplate.name, anyFamily, "", Reboot},
		{bundleHostStateTemplate.name, anyFamily, "", func() (ssh.Command, error) { return BundleHostState(testBundleHost(false, true)) }},
		{bundleHostTemplate.name, anyFamily, "", func() (ssh.Command, error) {
			return BundleHost(testBundleHost(true, false), []string{"packages/os/debian-12/old_1_amd64.deb"})
		}},
		{bundleSourcesTemplate.name, anyFamily, "", func() (ssh.Command, error) {
			return BundleSources(BundleSourcesParams{URL: "http://10.0.0.1:8480/packages/os/debian-12/", Key: "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nxjMEZ...\n-----END PGP PUBLIC KEY BLOCK-----"})
		}},
		{bundleSourcesTemplate.name, anyFamily, "check", func() (ssh.Command, error) {
			return BundleSources(BundleSourcesParams{Check: true, URL: "http://10.0.0.1:8480/packages/os/debian-12/", Key: "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nxjMEZ...\n-----END PGP PUBLIC KEY BLOCK-----"})
		}},
		{bundleSourcesTemplate.name, anyFamily, "remove", func() (ssh.Command, error) { return BundleSources(BundleSourcesParams{Remove: true}) }},
		{bundleSourcesTemplate.name, anyFamily, "check-remove", func() (ssh.Command, error) {
			return BundleSources(BundleSourcesParams{Remove: true, Check: true})
		}},
		{bundleHostTemplate.name, anyFamily, "part", func() (ssh.Command, error) {
			p := testBundleHost(true, false)
			p.ExtractOnly = true
			return BundleHost(p, nil)
		}},
		{bundleHostTemplate.name, anyFamily, "remove", func() (ssh.Command, error) {
			p := testBundleHost(false, false)
			p.Remove = true
			return BundleHost(p, nil)
		}},
		{moduleSwapTemplate.name, anyFamily, "", func() (ssh.Command, error) {
			return ModuleSwap(ModuleSwapParams{Driver: "590.48.01", Units: GPUConsumerUnits})
		}},
		{kubePrepareTemplate.name, anyFamily, "", func() (ssh.Command, error) { return KubePrepare(KubePrepareParams{}) }},
		{kubePrepareTemplate.name, anyFamily, "check", func() (ssh.Command, error) { return KubePrepare(KubePrepareParams{Check: true}) }},
		{kubeadmInitTemplate.name, anyFamily, "", func() (ssh.Command, error) {
			return KubeadmInit(KubeadmParams{ConfigFile: "/etc/kubernetes/gpukit/kubeadm-init.yaml", LogFile: "/var/log/gpukit/kubeadm-init.log"}, []byte("kind: InitConfiguration"))
		}},
		{kubeadmJoinTemplate.name, anyFamily, "", func() (ssh.Command, error) {
			return KubeadmJoin(KubeadmParams{ConfigFile: "/etc/kubernetes/gpukit/kubeadm-join.yaml", LogFile: "/var/log/gpukit/kubeadm-join.log"}, []byte("kind: JoinConfiguration"))
		}},
		{kubeadmJoinTemplate.name, anyFamily, "control-plane", func() (ssh.Command, error) {
			return KubeadmJoin(KubeadmParams{ConfigFile: "/etc/kubernetes/gpukit/kubeadm-join.yaml", LogFile: "/var/log/gpukit/kubeadm-join.log", ControlPlane: true}, []byte("kind: JoinConfiguration"))
		}},
		{kubeJoinTokenTemplate.name, anyFamily, "", func() (ssh.Command, error) { return KubeJoinToken(KubeJoinTokenParams{TTL: "15m"}) }},
		{kubeJoinTokenTemplate.name, anyFamily, "upload-certs", func() (ssh.Command, error) {
			return KubeJoinToken(KubeJoinTokenParams{TTL: "15m", UploadCerts: true})
		}},
		{kubeAdminConfTemplate.name, anyFamily, "", KubeAdminConf},
		{kubeNodesTemplate.name, anyFamily, "", KubeNodes},
		{kubeNodesJSONTemplate.name, anyFamily, "", KubeNodesJSON},
		{kubeNodesRemoveTemplate.name, anyFamily, "", func() (ssh.Command, error) {
			return KubeNodesRemove(KubeNodesRemoveParams{DrainTimeout: "5m"}, []string{"w1"})
		}},
		{kubeResetTemplate.name, anyFamily, "", func() (ssh.Command, error) {
			return KubeReset(KubeResetParams{BackupDir: "/var/lib/gpukit/kubernetes/originals"})
		}},
		{kubeResetTemplate.name, anyFamily, "check", func() (ssh.Command, error) {
			return KubeReset(KubeResetParams{Check: true, BackupDir: "/var/lib/gpukit/kubernetes/originals"})
		}},
		{containerdConfigTemplate.name, anyFamily, "", func() (ssh.Command, error) {
			return ContainerdConfig(BackupParams{BackupDir: "/var/lib/gpukit/kubernetes/originals"}, "version = 3",
				map[string]string{"/etc/containerd/certs.d/docker.io/hosts.toml": "server = 'x'"})
		}},
		{nvidiaHealthTemplate.name, anyFamily, "", NVIDIAHealth},
		{gpuConsumersStopTemplate.name, anyFamily, "", func() (ssh.Command, error) {
			return GPUConsumersStop(GPUConsumersStopParams{Units: GPUConsumerUnits})
		}},
		{gpuConsumersStopTemplate.name, anyFamily, "force", func() (ssh.Command, error) {
			return GPUConsumersStop(GPUConsumersStopParams{Units: GPUConsumerUnits, Force: true})
		}},
		{gpuStatusTemplate.name, anyFamily, "", GPUStatus},
		{migTemplate.name, anyFamily, "", func() (ssh.Command, error) {
			script, err := MIGScript(migExample)
			return ssh.Command{Name: "mig", Script: script}, err
		}},
		{migInstallTemplate.name, anyFamily, "", func() (ssh.Command, error) {
			script, err := MIGScript(migExample)
			if err != nil {
				return ssh.Command{}, err
			}
			return MIGInstall(MIGInstallParams{Script: script, Unit: MIGUnit})
		}},
		{migInstallTemplate.name, anyFamily, "remove", func() (ssh.Command, error) { return MIGInstall(MIGInstallParams{}) }},
		{gpuDiagTemplate.name, anyFamily, "", func() (ssh.Command, error) { return GPUDiag(GPUDiagParams{Level: 2, TimeoutSeconds: 900}) }},
		{ncclNodeTemplate.name, anyFamily, "", func() (ssh.Command, error) {
			return NCCLNode(NCCLNodeParams{Paths: []string{"/usr/local/bin/all_reduce_perf", "/opt/nccl-tests/build/all_reduce_perf"}, MinBytes: "8M", MaxBytes: "4G", TimeoutSeconds: 600})
		}},
		{etcdSnapshotTemplate.name, anyFamily, "", func() (ssh.Command, error) {
			return EtcdSnapshot(EtcdSnapshotParams{Dir: "/var/lib/gpukit/etcd-snapshots", Name: "before-driver-580.95.05-20261202T170000Z.db"})
		}},
		{etcdSnapshotFileTemplate.name, anyFamily, "", func() (ssh.Command, error) {
			return EtcdSnapshotFile(EtcdSnapshotFileParams{Path: "/var/lib/gpukit/etcd-snapshots/backup-20261205T000000Z.db"})
		}},
		{etcdSnapshotFileTemplate.name, anyFamily, "remove", func() (ssh.Command, error) {
			return EtcdSnapshotFile(EtcdSnapshotFileParams{Path: "/var/lib/gpukit/etcd-snapshots/backup-20261205T000000Z.db", Remove: true})
		}},
		{etcdMembersTemplate.name, anyFamily, "", EtcdMembers},
		{etcdRestoreTemplate.name, anyFamily, "stop", func() (ssh.Command, error) {
			return EtcdRestore(EtcdRestoreParams{Step: RestoreStop, Hold: "/etc/kubernetes/gpukit-restore", TimeoutSeconds: 180})
		}},
		{etcdRestoreTemplate.name, anyFamily, "", func() (ssh.Command, error) {
			return EtcdRestore(EtcdRestoreParams{Step: RestoreRestore, Snapshot: "/var/lib/gpukit/etcd-restore/snapshot.db",
				SHA256: strings.Repeat("ab", 32), Name: "cp-1", PeerURL: "https://10.0.0.10:2380", DataDir: "/var/lib/etcd",
				InitialCluster: "cp-1=https://10.0.0.10:2380,cp-2=https://10.0.0.11:2380", Token: "gpukit-restore-20261205T000000Z",
				Image: "registry.k8s.io/etcd:3.7.0-0", Before: "/var/lib/gpukit/etcd-before-restore/20261205T000000Z"})
		}},
		{etcdRestoreTemplate.name, anyFamily, "start", func() (ssh.Command, error) {
			return EtcdRestore(EtcdRestoreParams{Step: RestoreStart, Hold: "/etc/kubernetes/gpukit-restore", TimeoutSeconds: 300})
		}},
		{etcdRestoreTemplate.name, anyFamily, "check", func() (ssh.Command, error) { return EtcdRestore(EtcdRestoreParams{Step: RestoreCheck}) }},
		{etcdBackupTimerTemplate.name, anyFamily, "", func() (ssh.Command, error) {
			return EtcdBackupTimer(EtcdBackupTimerParams{Mode: TimerApply, Unit: "gpukit-etcd-backup", Script: "/usr/local/lib/gpukit/etcd-backup",
				OnCalendar: "*-*-* 02:00:00", Dir: "/var/lib/gpukit/etcd-snapshots", Keep: 7})
		}},
		{etcdBackupTimerTemplate.name, anyFamily, "check", func() (ssh.Command, error) {
			return EtcdBackupTimer(EtcdBackupTimerParams{Mode: TimerCheck, Unit: "gpukit-etcd-backup", Script: "/usr/local/lib/gpukit/etcd-backup",
				OnCalendar: "daily", Dir: "/var/lib/gpukit/etcd-snapshots", Keep: 7})
		}},
		{etcdBackupTimerTemplate.name, anyFamily, "remove", func() (ssh.Command, error) {
			return EtcdBackupTimer(EtcdBackupTimerParams{Mode: TimerRemove, Unit: "gpukit-etcd-backup", Script: "/usr/local/lib/gpukit/etcd-backup", Dir: "/var/lib/gpukit/etcd-snapshots"})
		}},
		{kubeUpgradeTemplate.name, anyFamily, "", func() (ssh.Command, error) {
			return KubeUpgrade(KubeUpgradeParams{Step: UpgradeApply, Version: "v1.37.2", IgnorePreflightErrors: []string{"SystemVerification"}, LogFile: "/var/log/gpukit/kubeadm-upgrade.log"})
		}},
		{kubeUpgradeTemplate.name, anyFamily, "node", func() (ssh.Command, error) {
			return KubeUpgrade(KubeUpgradeParams{Step: UpgradeNode, LogFile: "/var/log/gpukit/kubeadm-upgrade.log"})
		}},
		{kubeUpgradeTemplate.name, anyFamily, "plan", func() (ssh.Command, error) {
			return KubeUpgrade(KubeUpgradeParams{Step: UpgradePlan, Version: "v1.37.2"})
		}},
		{kubeUpgradeTemplate.name, anyFamily, "version", func() (ssh.Command, error) { return KubeUpgrade(KubeUpgradeParams{Step: UpgradeVersion}) }},
		{kubeUpgradeTemplate.name, anyFamily, "restart", func() (ssh.Command, error) { return KubeUpgrade(KubeUpgradeParams{Step: UpgradeRestart}) }},
		{waitBootTemplate.name, anyFamily, "", func() (ssh.Command, error) { return WaitBoot(WaitBootParams{TimeoutSeconds: 300}) }},
		{dockerConfigTemplate.name, anyFamily, "", func() (ssh.Command, error) {
			return DockerConfig(BackupParams{BackupDir: "/var/lib/gpukit/swarm/originals"}, "{}", "", "/etc/docker/certs.d/registry.site:8443/gpukit-mirror-ca.crt", "-----BEGIN CERTIFICATE-----")
		}},
		{swarmPlatformStateTemplate.name, anyFamily, "", func() (ssh.Command, error) { return SwarmPlatformState(swarmPlatform) }},
		{swarmStackDeployTemplate.name, anyFamily, "", func() (ssh.Command, error) {
			return SwarmStackDeploy(swarmPlatform, "gpukit-monitoring", 10*time.Minute)
		}},
		{swarmPlatformRemoveTemplate.name, anyFamily, "", func() (ssh.Command, error) {
			return SwarmPlatformRemove(swarmPlatform, []string{"gpukit-ingress", "gpukit-monitoring"})
		}},
		{swarmInitTemplate.name, anyFamily, "", func() (ssh.Command, error) {
			return SwarmInit(SwarmAddrParams{AdvertiseAddr: "10.0.0.10", ListenAddr: "10.0.0.10:2377"})
		}},
		{swarmJoinTemplate.name, anyFamily, "", func() (ssh.Command, error) {
			return SwarmJoin(SwarmAddrParams{AdvertiseAddr: "fd00::11", ListenAddr: "[fd00::11]:2377", Manager: "10.0.0.10:2377"}, "SWMTKN-1-x")
		}},
		{swarmTokenTemplate.name, anyFamily, "", func() (ssh.Command, error) { return SwarmToken("worker") }},
		{swarmNodesTemplate.name, anyFamily, "", func() (ssh.Command, error) { return SwarmNodes() }},
		{swarmNodeTasksTemplate.name, anyFamily, "", func() (ssh.Command, error) { return SwarmNodeTasks("2f8kq0v4n6a7pz3x1c9d5e4rb") }},
		{dockerCheckpointTemplate.name, anyFamily, "", func() (ssh.Command, error) {
			return DockerCheckpoint(DockerCheckpointParams{Container: strings.Repeat("ab", 32), Signal: "SIGUSR1"})
		}},
		{swarmNodeUpdateTemplate.name, anyFamily, "", func() (ssh.Command, error) {
			return SwarmNodeUpdate([]NodeUpdate{{ID: "tit1cjh3nuuu1phq060g5e7pv", Options: []string{"--label-add", "a=b"}}})
		}},
		{swarmNodeRemoveTemplate.name, anyFamily, "", func() (ssh.Command, error) {
			return SwarmNodeRemove([]string{"tit1cjh3nuuu1phq060g5e7pv"})
		}},
		{swarmResetTemplate.name, anyFamily, "", func() (ssh.Command, error) {
			return SwarmReset(BackupParams{BackupDir: "/var/lib/gpukit/swarm/originals"})
		}},
	}
	for _, f := range osfamily.All() {
		out = append(out, familyCases(f)...)
	}
	return out
}

// bomKey is the bill of materials' key for a repository.
func bomKey(repo, pm string) manifests.SigningKey {
	k, ok := manifests.Bill().SigningKey(repo, pm)
	if !ok {
		panic(repo + " " + pm)
	}
	return k
}

// migExample is an H100 host: a mixed layout on GPU 0, seven 1g.10gb on GPU
// 1, MIG off on GPU 2.
var migExample = MIGParams{Units: GPUConsumerUnits, GPUs: []MIGGPU{
	{Index: 0, Enabled: true, Profiles: []string{"3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"}, IDs: []int{9, 14, 19, 19}},
	{Index: 1, Enabled: true, Profiles: []string{"1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb"}, IDs: []int{19, 19, 19, 19, 19, 19, 19}},
	{Index: 2},
}}

// familyCases are the scripts that differ per OS family, with the
// parameters pkg/nvidia gives a typical host of the family.
func familyCases(f osfamily.Info) []goldenCase {
	fam := string(f.Family)
	cuda := "https://developer.download.nvidia.com/compute/cuda/repos/" + f.CUDARepo + "/x86_64/"
	pm := string(f.PackageManager)
	repo := NVIDIARepoParams{Family: f, Source: "cuda-repo", RepoURL: cuda, Arch: "x86_64", Key: bomKey(manifests.RepoCUDA, pm)}
	driver := NVIDIADriverParams{Family: f, Version: "580.95.05", Packages: []string{"nvidia-open"}, Stream: "580-open"}
	fm := FabricManagerParams{Family: f, Package: "nvidia-fabricmanager", Version: "580.95.05"}
	if f.Family == osfamily.Debian12 {
		repo.Components = []string{"contrib"}
	}
	if f.PackageManager == osfamily.Dnf {
		driver.Packages = []string{"nvidia-open"}
		fm.Package = "nvidia-fabric-manager"
	}
	out := []goldenCase{
		{nvidiaPrepareTemplate.name, fam, "", func() (ssh.Command, error) {
			return NVIDIAPrepare(NVIDIAPrepareParams{Family: f, Headers: true})
		}},
		{nvidiaRepoTemplate.name, fam, "", func() (ssh.Command, error) { return NVIDIARepo(repo) }},
		{nvidiaDriverTemplate.name, fam, "", func() (ssh.Command, error) { return NVIDIADriver(driver) }},
		{fabricManagerTemplate.name, fam, "", func() (ssh.Command, error) { return FabricManager(fm) }},
		{persistencedTemplate.name, fam, "", func() (ssh.Command, error) { return Persistenced(PersistencedParams{Family: f}) }},
		{cudaToolkitTemplate.name, fam, "", func() (ssh.Command, error) {
			return CUDAToolkit(CUDAToolkitParams{Family: f, CUDA: "13.0"})
		}},
		{containerToolkitTemplate.name, fam, "", func() (ssh.Command, error) {
			return ContainerToolkit(ContainerToolkitParams{
				Family: f, RepoURL: "https://nvidia.github.io/libnvidia-container/", Version: "1.20.0", DebArch: "amd64",
				Key: bomKey(manifests.RepoContainerToolkit, pm),
				Runtimes: []RuntimeConfig{
					{Name: "containerd", Binary: "containerd", Service: "containerd", ConfigFiles: []string{"/etc/containerd/config.toml", "/etc/containerd/conf.d/99-nvidia.toml"}},
					{Name: "docker", Binary: "dockerd", Service: "docker", ConfigFiles: []string{"/etc/docker/daemon.json"}},
				},
			})
		}},
		{swarmStateTemplate.name, fam, "", func() (ssh.Command, error) {
			return SwarmState(SwarmStateParams{Family: f, Packages: []string{"docker-ce", "docker-ce-cli", "containerd.io"}, BackupDir: "/var/lib/gpukit/swarm/originals"})
		}},
	}
	// The Docker engine: Debian's docker.io, Docker's repository elsewhere.
	engine := DockerEngineParams{Family: f, Source: DockerCE, Version: "28.2.2", Key: bomKey(manifests.RepoDocker, pm),
		Packages: []string{"docker-ce", "docker-ce-cli"}, Extra: []string{"containerd.io"}}
	switch f.PackageManager {
	case osfamily.Apt:
		engine.RepoURL = "https://download.docker.com/linux/ubuntu/"
	default:
		engine.RepoURL = "https://download.docker.com/linux/rhel/"
	}
	if f.Family == osfamily.Debian12 {
		engine = DockerEngineParams{Family: f, Source: DockerDistribution, Packages: []string{"docker.io"}}
		out = append(out, goldenCase{dockerEngineTemplate.name, fam, "pinned", func() (ssh.Command, error) {
			return DockerEngine(DockerEngineParams{Family: f, Source: DockerDistribution, Version: "20.10.24", Packages: []string{"docker.io"}})
		}})
	}
	out = append(out, goldenCase{dockerEngineTemplate.name, fam, "", func() (ssh.Command, error) { return DockerEngine(engine) }})
	kube := KubePackagesParams{Family: f, RepoURL: "https://pkgs.k8s.io/core:/stable:/v1.37/deb/", Version: "1.37.2", Key: bomKey(manifests.RepoKubernetes, pm),
		Packages: []string{"kubeadm", "kubelet", "kubectl"}, Extra: []string{"cri-tools"}}
	if f.PackageManager == osfamily.Dnf {
		kube.RepoURL = "https://pkgs.k8s.io/core:/stable:/v1.37/rpm/"
	}
	out = append(out, goldenCase{kubePackagesTemplate.name, fam, "", func() (ssh.Command, error) { return KubePackages(kube) }})
	out = append(out, goldenCase{kubeStateTemplate.name, fam, "", func() (ssh.Command, error) {
		return KubeState(KubeStateParams{Family: f, Packages: []string{"kubeadm", "kubelet", "kubectl", "cri-tools", "containerd.io"},
			KubernetesVersion: "v1.37.2", ImageRepository: "registry.example.com:5000/k8s"})
	}})
	ctrd := ContainerdParams{Family: f, Source: ContainerdFromDocker, RepoURL: engine.RepoURL, Version: "2.3.1", Key: bomKey(manifests.RepoDocker, pm),
		Packages: []string{"containerd.io"}, Extra: []string{"containernetworking-plugins"}, CNIDir: "/usr/lib/cni"}
	if f.Family == osfamily.Debian12 {
		ctrd.RepoURL = "https://download.docker.com/linux/debian/"
		out = append(out, goldenCase{containerdTemplate.name, fam, "distribution", func() (ssh.Command, error) {
			return Containerd(ContainerdParams{Family: f, Source: ContainerdFromDistribution, Packages: []string{"containerd"},
				Extra: []string{"containernetworking-plugins"}, CNIDir: "/usr/lib/cni"})
		}})
	}
	if f.PackageManager == osfamily.Dnf {
		ctrd.CNIDir = "/usr/libexec/cni"
	}
	out = append(out, goldenCase{containerdTemplate.name, fam, "", func() (ssh.Command, error) {
		return Containerd(ctrd)
	}})
	// The proxy's four modes; swarm's dockerd on one family, Kubernetes'
	// services on the others.
	units := []string{"containerd", "kubelet"}
	if f.Family == osfamily.Ubuntu2204 {
		units = []string{"docker"}
	}
	for _, mode := range []string{ProxyApply, ProxyCheck, ProxyRemove, ProxyCheckRemove} {
		p := HostProxyParams{Family: f, Mode: mode, Units: units}
		if mode == ProxyApply || mode == ProxyCheck {
			p.HTTP, p.HTTPS = "http://proxy.example.com:3128", "http://proxy.example.com:3129"
			p.NoProxy = []string{".corp.example.com", "registry.example.com", "10.1.0.0/16", "localhost", "127.0.0.1", "::1", "gpu-01", "10.0.0.11", "10.244.0.0/16", "10.96.0.0/12", ".svc", ".cluster.local"}
			p.APTDirect = []string{".corp.example.com", "registry.example.com", "10.1.0.0/16"}
		}
		variant := mode
		if mode == ProxyApply {
			variant = ""
		}
		out = append(out, goldenCase{hostProxyTemplate.name, fam, variant, func() (ssh.Command, error) { return HostProxy(p) }})
	}
	// Variants: the distribution's own driver, and the proprietary modules.
	switch f.Family {
	case osfamily.Debian12:
		out = append(out,
			goldenCase{nvidiaRepoTemplate.name, fam, "distribution", func() (ssh.Command, error) {
				return NVIDIARepo(NVIDIARepoParams{Family: f, Source: "distribution", Components: []string{"contrib", "non-free", "non-free-firmware"}})
			}},
			goldenCase{nvidiaDriverTemplate.name, fam, "distribution", func() (ssh.Command, error) {
				return NVIDIADriver(NVIDIADriverParams{Family: f, Version: "535", Packages: []string{"nvidia-driver", "firmware-nvidia-gsp"}})
			}})
	case osfamily.Ubuntu2404:
		out = append(out, goldenCase{nvidiaDriverTemplate.name, fam, "proprietary", func() (ssh.Command, error) {
			return NVIDIADriver(NVIDIADriverParams{Family: f, Version: "570", Packages: []string{"cuda-drivers"}})
		}})
	case osfamily.RHEL9:
		out = append(out, goldenCase{nvidiaDriverTemplate.name, fam, "proprietary", func() (ssh.Command, error) {
			return NVIDIADriver(NVIDIADriverParams{Family: f, Version: "570", Packages: []string{"cuda-drivers"}, Stream: "570-dkms"})
		}})
	}
	return out
}

func (c goldenCase) path() string {
	name := c.family
	if c.variant != "" {
		name += "." + c.variant
	}
	return path.Join("testdata", strings.TrimSuffix(c.template, ".sh"), name+".sh")
}

var ownPID = regexp.MustCompile(`\$\$|\$\{?PPID\b`)

// TestGolden compares every rendered script with its golden file
// (go test ./pkg/scripts -update rewrites them), and runs bash -n and
// shellcheck on it.
func TestGolden(t *testing.T) {
	t.Parallel()
	for _, c := range cases() {
		t.Run(c.path(), func(t *testing.T) {
			t.Parallel()
			cmd, err := c.render()
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(cmd.Script, Prelude) {
				t.Error("script does not start with the strict prelude")
			}
			golden.AssertString(t, c.path(), cmd.Script)
			shellcheck.Check(t, c.path(), cmd.Script)
			// Scripts run in a subshell of pkg/ssh's runner: $$ and $PPID
			// name the runner and the login shell, not the script.
			if m := ownPID.FindString(cmd.Script); m != "" {
				t.Errorf("the script uses %s: use $BASHPID for its own process", m)
			}
		})
	}
}

// Every template has golden cases, for one family or for each: a script
// added without them fails here.
func TestEveryTemplateHasGoldenFiles(t *testing.T) {
	t.Parallel()
	families := map[string][]string{}
	for _, c := range cases() {
		if c.variant == "" {
			families[c.template] = append(families[c.template], c.family)
		}
	}
	all := len(osfamily.All())
	err := fs.WalkDir(templates, "templates", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p == "templates/lib" {
				return fs.SkipDir // snippets, golden through the scripts that use them
			}
			return nil
		}
		fams := families[path.Base(p)]
		switch {
		case len(fams) == 0:
			t.Errorf("%s has no golden case", p)
		case len(fams) > 1 && len(fams) != all:
			t.Errorf("%s is rendered for %d of %d OS families: %v", p, len(fams), all, fams)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// The probe asks nvidia-smi for exactly the fields the parser reads.
func TestProbeUsesTheParsersFields(t *testing.T) {
	t.Parallel()
	cmd, err := Probe(ProbeParams{GPUFields: facts.GPUQueryFields()})
	if err != nil {
		t.Fatal(err)
	}
	if want := "--query-gpu=" + strings.Join(facts.GPUQueryFields(), ","); !strings.Contains(cmd.Script, want) {
		t.Errorf("probe lacks %q", want)
	}
	if !cmd.Sudo {
		t.Error("the probe must run as root")
	}
}

func TestParamsAreValidatedBeforeRendering(t *testing.T) {
	t.Parallel()
	for _, bad := range [][]string{nil, {"index; rm -rf /"}, {"uuid", "$(id)"}, {"Name"}} {
		if _, err := Probe(ProbeParams{GPUFields: bad}); err == nil {
			t.Errorf("fields %q accepted", bad)
		}
	}
}

func TestQuote(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"plain":     "plain",
		"two words": "'two words'",
		"it's":      `"it's"`,
		"$(reboot)": "'$(reboot)'",
		"a\nb":      "$'a\\nb'",
		"tab\there": "$'tab\\there'",
		"":          "''",
	} {
		if got, err := Quote(in); err != nil || got != want {
			t.Errorf("Quote(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := Quote("nul\x00"); err == nil {
		t.Error("a NUL byte cannot be quoted and must be refused")
	}
}

// swarmPlatform are pkg/swarmplatform's places.
var swarmPlatform = SwarmPlatformParams{Dir: "/var/lib/gpukit/platform", Network: "gpukit-platform", StackLabel: "dev.gpukit.stack",
	PasswordFile: "gpukit-monitoring/grafana-admin", CertFile: "gpukit-ingress/ingress.crt", KeyFile: "gpukit-ingress/ingress.key", TimeoutSeconds: 300}
