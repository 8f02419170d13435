package scripts

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/gpukit/gpukit/manifests"
	"github.com/gpukit/gpukit/pkg/osfamily"
	"github.com/gpukit/gpukit/pkg/ssh"
)

// The NVIDIA layer's scripts. pkg/nvidia decides what a host gets (source,
// packages, versions); these only render it, after checking every value.
var (
	nvidiaStateTemplate      = parse[NVIDIAStateParams]("nvidia-state.sh")
	nvidiaPrepareTemplate    = parse[NVIDIAPrepareParams]("nvidia-prepare.sh")
	nvidiaRepoTemplate       = parse[NVIDIARepoParams]("nvidia-repo.sh")
	nvidiaDriverTemplate     = parse[NVIDIADriverParams]("nvidia-driver.sh")
	fabricManagerTemplate    = parse[FabricManagerParams]("nvidia-fabricmanager.sh")
	persistencedTemplate     = parse[PersistencedParams]("nvidia-persistenced.sh")
	cudaToolkitTemplate      = parse[CUDAToolkitParams]("cuda-toolkit.sh")
	containerToolkitTemplate = parse[ContainerToolkitParams]("nvidia-container-toolkit.sh")
	rebootTemplate           = parse[NoParams]("reboot.sh")
	moduleSwapTemplate       = parse[ModuleSwapParams]("nvidia-module-swap.sh")
	nvidiaHealthTemplate     = parse[NoParams]("nvidia-health.sh")
	waitBootTemplate         = parse[WaitBootParams]("wait-boot.sh")
)

// NoParams is the parameter set of a script that takes none.
type NoParams struct{}

// Validate accepts it.
func (NoParams) Validate() error { return nil }

var (
	packageName = regexp.MustCompile(`^[a-z0-9][a-z0-9+.-]*$`)
	// a driver release (580.95.05, 535.261.03) or branch (580)
	driverVersion = regexp.MustCompile(`^[0-9]{3}(\.[0-9]{1,3}){0,2}$`)
	semver        = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+$`)
	cudaVersion   = regexp.MustCompile(`^[0-9]{1,2}\.[0-9]{1,2}$`)
	moduleStream  = regexp.MustCompile(`^[0-9]{3}(-open|-dkms)?$`)
	filePath      = regexp.MustCompile(`^/[A-Za-z0-9_./+-]+$`)
)

func checkFamily(f osfamily.Info) error {
	if f.Family == "" || (f.PackageManager != osfamily.Apt && f.PackageManager != osfamily.Dnf) {
		return fmt.Errorf("no OS family")
	}
	return nil
}

// checkBaseURL accepts an http(s) URL ending in "/", the form every
// repository base takes in the scripts.
func checkBaseURL(what, s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || !strings.HasSuffix(s, "/") ||
		u.RawQuery != "" || u.Fragment != "" || u.User != nil || strings.ContainsAny(s, " '\"\\$`") {
		return fmt.Errorf("%s %q: want an http(s) URL ending in /, without credentials, query or quotes", what, s)
	}
	return nil
}

// checkPinned checks what lib/pinned.tmpl installs: the family, the pinned
// packages (at least one) and the extra ones.
func checkPinned(f osfamily.Info, packages, extra []string) error {
	if err := checkFamily(f); err != nil {
		return err
	}
	if err := checkPackages(packages); err != nil {
		return err
	}
	for _, e := range extra {
		if !packageName.MatchString(e) {
			return fmt.Errorf("package name %q", e)
		}
	}
	return nil
}

func checkPackages(list []string) error {
	if len(list) == 0 {
		return fmt.Errorf("no packages")
	}
	for _, p := range list {
		if !packageName.MatchString(p) {
			return fmt.Errorf("package name %q", p)
		}
	}
	return nil
}

// NVIDIAStateParams are the parameters of the NVIDIA state probe.
type NVIDIAStateParams struct {
	// GPUFields are the nvidia-smi --query-gpu fields, in the order
	// facts.ParseGPU reads them (facts.GPUQueryFields).
	GPUFields []string
}

// Validate checks the field names.
func (p NVIDIAStateParams) Validate() error { return ProbeParams{GPUFields: p.GPUFields}.Validate() }

// NVIDIAState returns the read-only command that reports the state of the
// NVIDIA stack on a host (pkg/nvidia parses it). It runs as root: holds,
// versionlocks and the module are root's view.
func NVIDIAState(p NVIDIAStateParams) (ssh.Command, error) {
	return command("nvidia state", nvidiaStateTemplate, p)
}

// NVIDIAPrepareParams prepare a host for the driver.
type NVIDIAPrepareParams struct {
	Family osfamily.Info
	// Headers installs the kernel headers and DKMS (a driver built on the
	// host); signed precompiled modules need neither.
	Headers bool
}

// Validate checks the family.
func (p NVIDIAPrepareParams) Validate() error { return checkFamily(p.Family) }

// NVIDIAPrepare returns the command that installs headers and DKMS for the
// running kernel and blacklists nouveau.
func NVIDIAPrepare(p NVIDIAPrepareParams) (ssh.Command, error) {
	return command("prepare for the driver", nvidiaPrepareTemplate, p)
}

// NVIDIARepoParams set up where the driver comes from.
type NVIDIARepoParams struct {
	Family osfamily.Info
	// Source is cuda-repo or distribution.
	Source string
	// RepoURL is the CUDA repository of this family and architecture
	// (cuda-repo), ending in "/".
	RepoURL string
	// Arch is the repository's architecture directory (x86_64, sbsa).
	Arch string
	// Key is the repository's signing key (cuda-repo).
	Key manifests.SigningKey
	// Components are apt components to enable on the distribution's own
	// sources (Debian: contrib non-free non-free-firmware).
	Components []string
}

var aptComponents = map[string]bool{"main": true, "contrib": true, "non-free": true, "non-free-firmware": true, "restricted": true, "universe": true, "multiverse": true}

// Validate checks every value that reaches the script.
func (p NVIDIARepoParams) Validate() error {
	if err := checkFamily(p.Family); err != nil {
		return err
	}
	for _, c := range p.Components {
		if !aptComponents[c] {
			return fmt.Errorf("apt component %q", c)
		}
	}
	switch p.Source {
	case "cuda-repo":
		if p.Arch != "x86_64" && p.Arch != "sbsa" {
			return fmt.Errorf("repository architecture %q: want x86_64 or sbsa", p.Arch)
		}
		if err := manifests.CheckSigningKey(p.Key); err != nil {
			return fmt.Errorf("CUDA repository: %w", err)
		}
		return checkBaseURL("CUDA repository", p.RepoURL)
	case "distribution":
		if p.Family.PackageManager != osfamily.Apt {
			return fmt.Errorf("%s has no distribution driver packages", p.Family.Name)
		}
		if len(p.Components) == 0 {
			return fmt.Errorf("no components to enable")
		}
		return nil
	}
	return fmt.Errorf("driver source %q", p.Source)
}

// NVIDIARepo returns the command that sets up the driver's package source.
func NVIDIARepo(p NVIDIARepoParams) (ssh.Command, error) {
	return command("set up the driver's package source", nvidiaRepoTemplate, p)
}

// NVIDIADriverParams install the driver.
type NVIDIADriverParams struct {
	Family osfamily.Info
	// Version is a release (580.95.05) or a branch (580).
	Version string
	// Packages are installed at that version; the first names the driver
	// (its version is the one held and reported).
	Packages []string
	// Stream is the dnf module stream (580-open, 580-dkms).
	Stream string
}

// Validate checks every value that reaches the script.
func (p NVIDIADriverParams) Validate() error {
	if err := checkFamily(p.Family); err != nil {
		return err
	}
	if !driverVersion.MatchString(p.Version) {
		return fmt.Errorf("driver version %q", p.Version)
	}
	if p.Family.PackageManager == osfamily.Dnf && !moduleStream.MatchString(p.Stream) {
		return fmt.Errorf("module stream %q", p.Stream)
	}
	return checkPackages(p.Packages)
}

// NVIDIADriver returns the command that installs and holds the driver.
func NVIDIADriver(p NVIDIADriverParams) (ssh.Command, error) {
	return command("install the driver", nvidiaDriverTemplate, p)
}

// FabricManagerParams install the fabric manager of a driver release.
type FabricManagerParams struct {
	Family  osfamily.Info
	Package string
	// Version is the driver's release; the fabric manager must match it.
	Version string
}

// Validate checks every value that reaches the script.
func (p FabricManagerParams) Validate() error {
	if err := checkFamily(p.Family); err != nil {
		return err
	}
	if !driverVersion.MatchString(p.Version) || strings.Count(p.Version, ".") == 0 {
		return fmt.Errorf("driver release %q", p.Version)
	}
	return checkPackages([]string{p.Package})
}

// FabricManager returns the command that installs, holds and starts the
// fabric manager.
func FabricManager(p FabricManagerParams) (ssh.Command, error) {
	return command("install the fabric manager", fabricManagerTemplate, p)
}

// PersistencedParams enable persistence mode.
type PersistencedParams struct{ Family osfamily.Info }

// Validate checks the family.
func (p PersistencedParams) Validate() error { return checkFamily(p.Family) }

// Persistenced returns the command that enables persistence mode
// (installing nvidia-persistenced where the driver did not).
func Persistenced(p PersistencedParams) (ssh.Command, error) {
	return command("enable persistence mode", persistencedTemplate, p)
}

// CUDAToolkitParams install a CUDA toolkit release.
type CUDAToolkitParams struct {
	Family osfamily.Info
	// CUDA is X.Y.
	CUDA string
}

// PackageVersion is the X-Y of cuda-toolkit-X-Y.
func (p CUDAToolkitParams) PackageVersion() string { return strings.ReplaceAll(p.CUDA, ".", "-") }

// Validate checks every value that reaches the script.
func (p CUDAToolkitParams) Validate() error {
	if err := checkFamily(p.Family); err != nil {
		return err
	}
	if !cudaVersion.MatchString(p.CUDA) {
		return fmt.Errorf("CUDA version %q", p.CUDA)
	}
	return nil
}

// CUDAToolkit returns the command that installs cuda-toolkit-X-Y.
func CUDAToolkit(p CUDAToolkitParams) (ssh.Command, error) {
	return command("install the CUDA toolkit", cudaToolkitTemplate, p)
}

// RuntimeConfig is a container runtime the container toolkit configures
// when it is installed.
type RuntimeConfig struct {
	// Name is nvidia-ctk's --runtime value: docker or containerd.
	Name, Binary, Service string
	// ConfigFiles are what nvidia-ctk changes; the runtime restarts only
	// when they did.
	ConfigFiles []string
}

// ContainerToolkitParams install the NVIDIA Container Toolkit.
type ContainerToolkitParams struct {
	Family osfamily.Info
	// RepoURL is the libnvidia-container repository base, ending in "/".
	RepoURL string
	// Key is the repository's signing key.
	Key manifests.SigningKey
	// Version is X.Y.Z.
	Version string
	// DebArch is the Debian architecture (amd64, arm64).
	DebArch string
	// Runtimes are configured when present.
	Runtimes []RuntimeConfig
	// SetAsDefault makes nvidia the runtime's default (Swarm needs it).
	SetAsDefault bool
}

// ContainerToolkitPackages are the toolkit's packages, pinned to one version
// together.
var ContainerToolkitPackages = []string{"nvidia-container-toolkit", "nvidia-container-toolkit-base", "libnvidia-container-tools", "libnvidia-container1"}

// Packages are ContainerToolkitPackages, for the template.
func (ContainerToolkitParams) Packages() []string { return ContainerToolkitPackages }

// Validate checks every value that reaches the script.
func (p ContainerToolkitParams) Validate() error {
	if err := checkFamily(p.Family); err != nil {
		return err
	}
	if !semver.MatchString(p.Version) {
		return fmt.Errorf("container toolkit version %q", p.Version)
	}
	if p.DebArch != "amd64" && p.DebArch != "arm64" {
		return fmt.Errorf("architecture %q", p.DebArch)
	}
	for _, r := range p.Runtimes {
		if (r.Name != "docker" && r.Name != "containerd") || !packageName.MatchString(r.Binary) || !packageName.MatchString(r.Service) {
			return fmt.Errorf("runtime %+v", r)
		}
		for _, f := range r.ConfigFiles {
			if !filePath.MatchString(f) {
				return fmt.Errorf("runtime configuration file %q", f)
			}
		}
	}
	if err := manifests.CheckSigningKey(p.Key); err != nil {
		return fmt.Errorf("container toolkit repository: %w", err)
	}
	return checkBaseURL("container toolkit repository", p.RepoURL)
}

// ContainerToolkit returns the command that installs and pins the toolkit
// and configures the runtimes present.
func ContainerToolkit(p ContainerToolkitParams) (ssh.Command, error) {
	return command("install the container toolkit", containerToolkitTemplate, p)
}

// Reboot returns the command that reboots the host two seconds after it
// returned.
func Reboot() (ssh.Command, error) {
	return command("reboot", rebootTemplate, NoParams{})
}

// ModuleSwapParams put the driver release on disk into memory without a
// reboot, the host's GPU consumers (Units) stopped around it.
type ModuleSwapParams struct {
	// Driver is the release on disk, which must end up loaded.
	Driver string
	Units  []string
}

// Validate checks the release and the unit names.
func (p ModuleSwapParams) Validate() error {
	if !strings.Contains(p.Driver, ".") || !driverVersion.MatchString(p.Driver) {
		return fmt.Errorf("driver release %q", p.Driver)
	}
	return GPUConsumersStopParams{Units: p.Units}.Validate()
}

// ModuleSwap returns the command that unloads the NVIDIA kernel modules and
// loads the ones on disk. Exit 3 with a line starting with NotSwappedPrefix
// says why it could not (the modules are in use): the host must reboot.
func ModuleSwap(p ModuleSwapParams) (ssh.Command, error) {
	return command("swap the driver's kernel modules", moduleSwapTemplate, p)
}

// NotSwappedPrefix starts the line ModuleSwap's script explains a refusal
// with.
const NotSwappedPrefix = "gpukit: not swapped: "

// WaitBootParams wait for a boot to finish.
type WaitBootParams struct{ TimeoutSeconds int }

// Validate checks the timeout.
func (p WaitBootParams) Validate() error {
	if p.TimeoutSeconds < 1 || p.TimeoutSeconds > 86400 {
		return fmt.Errorf("boot timeout %d s", p.TimeoutSeconds)
	}
	return nil
}

// WaitBoot returns the read-only command that waits until systemd has
// finished starting the host (at most p.TimeoutSeconds).
func WaitBoot(p WaitBootParams) (ssh.Command, error) {
	return command("wait for the boot to finish", waitBootTemplate, p)
}

// NVIDIAHealth returns the read-only command that prints nvidia-smi's full
// report (XML, or text where XML is not available).
func NVIDIAHealth() (ssh.Command, error) {
	return command("nvidia health", nvidiaHealthTemplate, NoParams{})
}

// command renders t into a root command named name.
func command[P Params](name string, t *Template[P], p P) (ssh.Command, error) {
	script, err := t.Render(p)
	if err != nil {
		return ssh.Command{}, err
	}
	return ssh.Command{Name: name, Script: script, Sudo: true}, nil
}
