package nvidia

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/gpukit/gpukit/manifests"
	"github.com/gpukit/gpukit/pkg/compat"
	"github.com/gpukit/gpukit/pkg/facts"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/osfamily"
	"github.com/gpukit/gpukit/pkg/scripts"
)

// Default sources, as NVIDIA publishes them. spec.mirrors.nvidia replaces
// both with one base URL laid out the same way: <base>/cuda/repos/... and
// <base>/libnvidia-container/...
const (
	DefaultCUDARepos            = "https://developer.download.nvidia.com/compute/cuda/repos/"
	DefaultContainerToolkitRepo = "https://nvidia.github.io/libnvidia-container/"
)

// Flavors of the kernel module.
const (
	Open        = "open"
	Proprietary = "proprietary"
)

// Want is what the NVIDIA layer installs on one host: the decision, made
// from the inventory and the host's facts before anything changes.
type Want struct {
	Family osfamily.Info
	// GPU is false for a host without an NVIDIA GPU: it gets nothing.
	GPU    bool
	Source string
	// Flavor is Open or Proprietary; Why says how it was decided.
	Flavor, Why string
	// Driver is the release or branch asked for.
	Driver   string
	Packages []string
	// Stream is the dnf module stream (RHEL family).
	Stream string
	// DKMS: the module is built on the host (headers and DKMS needed);
	// false for vendor-signed precompiled modules.
	DKMS bool
	// Repo is the driver's package source.
	Repo scripts.NVIDIARepoParams
	// FabricManager is set on NVSwitch systems (or when asked for).
	FabricManager bool
	// CUDA is X.Y when the host gets the CUDA toolkit, else "".
	CUDA string
	// ContainerToolkit installs the NVIDIA Container Toolkit.
	ContainerToolkit scripts.ContainerToolkitParams
}

// Decide says what host m (probed as f) gets. Its error is a choice the
// inventory must change for this host (Secure Boot, a source its OS lacks),
// worded for the operator; preflight reports it before anything changes.
func Decide(inv *inventory.Inventory, m inventory.Machine, f *facts.Facts) (Want, error) {
	spec := inv.Cluster.Spec
	n := spec.NVIDIA
	var w Want
	if f == nil {
		return w, fmt.Errorf("no facts")
	}
	fam, err := f.OS.Family()
	if err != nil {
		return w, err
	}
	w.Family, w.Source, w.Driver = fam, n.DriverSource, m.DriverVersion(&spec)
	w.GPU = len(f.PCIGPUs) > 0 || len(f.GPUs) > 0
	if !w.GPU {
		return w, nil
	}
	w.Flavor, w.Why = flavor(n.KernelModules, f)
	arch, debArch, err := archOf(f.Arch)
	if err != nil {
		return w, err
	}
	branch, _, _ := strings.Cut(w.Driver, ".")
	w.DKMS = true
	if f.SecureBootEnabled() {
		switch n.SecureBoot {
		case inventory.SecureBootRefuse:
			return w, &SecureBootError{State: f.SecureBoot, Msg: "a driver module built by DKMS would not load; choose spec.nvidia.secureBoot: signed or mok " +
				"(signed: modules signed by the OS vendor, Ubuntu and RHEL; mok: DKMS modules signed with a Machine Owner Key you enroll at the console), " +
				"or turn Secure Boot off in the firmware"}
		case inventory.SecureBootSigned:
			if !fam.SignedNVIDIAModules {
				return w, &SecureBootError{State: f.SecureBoot, Msg: fmt.Sprintf("spec.nvidia.secureBoot is signed, but %s offers no vendor-signed NVIDIA modules: use mok, or turn Secure Boot off", fam.Name)}
			}
			w.DKMS = false
		}
	}
	w.Repo = scripts.NVIDIARepoParams{Family: fam, Source: w.Source, Arch: arch}
	switch w.Source {
	case inventory.DriverSourceCUDARepo:
		base := DefaultCUDARepos
		if m := spec.Mirrors.NVIDIA; m != "" {
			base = strings.TrimSuffix(m, "/") + "/cuda/repos/"
		}
		w.Repo.RepoURL = base + fam.CUDARepo + "/" + arch + "/"
		if fam.Family == osfamily.Debian12 {
			w.Repo.Components = []string{"contrib"}
		}
		w.Repo.Key = spec.Mirrors.SigningKey(manifests.RepoCUDA, string(fam.PackageManager))
		switch {
		case fam.PackageManager == osfamily.Dnf && !w.DKMS:
			w.Stream, w.Packages = branch, []string{"nvidia-driver", "nvidia-driver-cuda"}
		case fam.PackageManager == osfamily.Dnf && w.Flavor == Open:
			w.Stream, w.Packages = branch+"-open", []string{"nvidia-open"}
		case fam.PackageManager == osfamily.Dnf:
			w.Stream, w.Packages = branch+"-dkms", []string{"cuda-drivers"}
		case !w.DKMS:
			w.Packages = ubuntuSigned(branch, w.Flavor)
		case w.Flavor == Open:
			w.Packages = []string{"nvidia-open"}
		default:
			w.Packages = []string{"cuda-drivers"}
		}
	case inventory.DriverSourceDistribution:
		if m.CUDAToolkit {
			return w, fmt.Errorf("the CUDA toolkit comes from NVIDIA's CUDA repository, and spec.nvidia.driverSource is distribution: " +
				"use driverSource cuda-repo, or ask for no CUDA toolkit on this host")
		}
		switch {
		case fam.PackageManager == osfamily.Dnf:
			return w, fmt.Errorf("%s has no NVIDIA driver packages of its own: use spec.nvidia.driverSource: cuda-repo", fam.Name)
		case fam.Family == osfamily.Debian12:
			w.Repo.Components = []string{"contrib", "non-free", "non-free-firmware"}
			w.Packages = []string{"nvidia-driver"}
			if w.Flavor == Open {
				w.Packages = []string{"nvidia-open-kernel-dkms", "nvidia-driver", "firmware-nvidia-gsp"}
			}
		default: // Ubuntu's restricted component
			w.Repo.Components = []string{"restricted"}
			if !w.DKMS {
				w.Packages = ubuntuSigned(branch, w.Flavor)
			} else {
				suffix := "-server"
				if w.Flavor == Open {
					suffix += "-open"
				}
				w.Packages = []string{"nvidia-headless-" + branch + suffix, "nvidia-utils-" + branch + "-server"}
			}
		}
	}
	w.FabricManager = n.FabricManager == inventory.FabricManagerAlways
	if m.CUDAToolkit {
		w.CUDA = m.CUDAVersion(&spec)
	}
	if err := w.supports(gpusOf(f)); err != nil {
		return w, err
	}
	toolkitBase := DefaultContainerToolkitRepo
	if mirror := spec.Mirrors.NVIDIA; mirror != "" {
		toolkitBase = strings.TrimSuffix(mirror, "/") + "/libnvidia-container/"
	}
	w.ContainerToolkit = scripts.ContainerToolkitParams{
		Family: fam, RepoURL: toolkitBase, Version: spec.Versions.ContainerToolkit, DebArch: debArch,
		Key:      spec.Mirrors.SigningKey(manifests.RepoContainerToolkit, string(fam.PackageManager)),
		Runtimes: runtimes(spec.Orchestrator, spec.Versions.Runtime), SetAsDefault: spec.Orchestrator == inventory.Swarm,
	}
	return w, nil
}

// SecureBootError is a host with Secure Boot on whose driver the inventory's
// choice (spec.nvidia.secureBoot) cannot load.
type SecureBootError struct {
	State string // what the host reported
	Msg   string
}

func (e *SecureBootError) Error() string {
	return fmt.Sprintf("Secure Boot is on (%s): %s", e.State, e.Msg)
}

// ubuntuSigned are Ubuntu's precompiled, Canonical-signed modules of a
// branch for the generic kernel flavour, and the user-space without DKMS.
func ubuntuSigned(branch, flavor string) []string {
	suffix := "-server"
	if flavor == Open {
		suffix += "-open"
	}
	return []string{"linux-modules-nvidia-" + branch + suffix + "-generic", "nvidia-headless-no-dkms-" + branch + suffix, "nvidia-utils-" + branch + "-server"}
}

// flavor picks the kernel modules: open on Turing and newer, proprietary if
// any GPU of the host is older, unless the inventory decides.
func flavor(choice string, f *facts.Facts) (string, string) {
	switch choice {
	case inventory.ModulesOpen:
		return Open, "spec.nvidia.kernelModules"
	case inventory.ModulesProprietary:
		return Proprietary, "spec.nvidia.kernelModules"
	}
	for _, g := range gpusOf(f) {
		if g.Known && !g.Arch.OpenModules {
			return Proprietary, fmt.Sprintf("GPU %s is %s, older than Turing", g, g.Arch.Name)
		}
	}
	return Open, "every GPU is Turing or newer"
}

// GPU is one GPU of a host as the probe saw it, with its generation.
type GPU struct {
	// Where is its PCI address, or its nvidia-smi index without one.
	Where string
	// What is its PCI device id and, when the driver runs, its name.
	What  string
	Arch  compat.Architecture
	Known bool // the table recognised it
}

func (g GPU) String() string { return g.Where + " (" + g.What + ")" }

// gpusOf are the host's GPUs: from the PCI bus, which shows them before any
// driver (named from nvidia-smi where it lists the same bus id), else from
// nvidia-smi's list alone (a container or VM without the PCI view).
func gpusOf(f *facts.Facts) []GPU {
	var out []GPU
	for _, d := range f.PCIGPUs {
		name := ""
		for _, g := range f.GPUs {
			if facts.SamePCIAddress(g.BusID, d.Address) {
				name = g.Name
			}
		}
		a, ok := compat.Recognize(d.DeviceID, name)
		what := "device " + d.DeviceID
		if name != "" {
			what += ", " + name
		}
		out = append(out, GPU{Where: d.Address, What: what, Arch: a, Known: ok})
	}
	if len(out) > 0 {
		return out
	}
	for _, g := range f.GPUs {
		a, ok := compat.Recognize("", g.Name)
		out = append(out, GPU{Where: "GPU " + strconv.Itoa(g.Index), What: g.Name, Arch: a, Known: ok})
	}
	return out
}

// UnsupportedGPUError is a host whose GPUs the chosen driver branch, CUDA
// toolkit or kernel modules do not support: found from the PCI device ids
// before anything is installed.
type UnsupportedGPUError struct {
	Arch string
	GPUs []GPU
	Msg  string
}

func (e *UnsupportedGPUError) Error() string {
	where := make([]string, len(e.GPUs))
	for i, g := range e.GPUs {
		where[i] = g.String()
	}
	return fmt.Sprintf("%s GPU(s) %s: %s", e.Arch, strings.Join(where, ", "), e.Msg)
}

// supports checks the decision against every GPU the table recognises; a
// GPU it does not (newer than the table) is not refused.
func (w Want) supports(gpus []GPU) error {
	branch, err := compat.ParseDriver(w.Driver)
	if err != nil {
		return nil // an inventory loaded without defaults (unit tests); validation refuses a malformed one
	}
	var cuda compat.CUDAVersion
	if w.CUDA != "" {
		if cuda, err = compat.ParseCUDA(w.CUDA); err != nil {
			return err
		}
	}
	byArch := map[string][]GPU{}
	var order []string
	for _, g := range gpus {
		if !g.Known {
			continue
		}
		if byArch[g.Arch.Name] == nil {
			order = append(order, g.Arch.Name)
		}
		byArch[g.Arch.Name] = append(byArch[g.Arch.Name], g)
	}
	for _, name := range order {
		gs := byArch[name]
		a := gs[0].Arch
		if err := a.SupportsBranch(branch.Branch); err != nil {
			fit := a.LastBranch
			if fit == 0 {
				fit = a.FirstBranch
			}
			return &UnsupportedGPUError{Arch: name, GPUs: gs, Msg: fmt.Sprintf("%v; set this host's nvidiaDriver (spec.hosts[].nvidiaDriver) or spec.versions.nvidiaDriver to %d", err, fit)}
		}
		if w.CUDA != "" {
			if err := a.SupportsCUDA(cuda); err != nil {
				fit := a.LastCUDA
				if fit == (compat.CUDAVersion{}) {
					fit = a.FirstCUDA
				}
				return &UnsupportedGPUError{Arch: name, GPUs: gs, Msg: fmt.Sprintf("%v; set this host's cuda (spec.hosts[].cuda) to %s, or install no CUDA toolkit on it (cudaToolkit: false)", err, fit)}
			}
		}
		// Only spec.nvidia.kernelModules: open gets here: auto picks the
		// proprietary modules for a GPU older than Turing.
		if w.Flavor == Open && !a.OpenModules {
			return &UnsupportedGPUError{Arch: name, GPUs: gs, Msg: "NVIDIA's open kernel modules drive Turing and newer GPUs only; set spec.nvidia.kernelModules to auto or proprietary"}
		}
	}
	return nil
}

// archOf maps uname -m to NVIDIA's repository directory and Debian's
// architecture.
func archOf(m string) (repo, deb string, err error) {
	switch m {
	case "x86_64":
		return "x86_64", osfamily.DebArch(m), nil
	case "aarch64":
		return "sbsa", osfamily.DebArch(m), nil
	}
	return "", "", fmt.Errorf("architecture %s: NVIDIA publishes drivers for x86_64 and aarch64", m)
}

// runtimes are the container runtimes the toolkit configures, when present.
// None under Kubernetes: kubernetes/containerd renders containerd's whole
// configuration, the NVIDIA runtime included, for the installed major;
// nvidia-ctk's drop-in beside it kept containerd from starting on a host
// whose original configuration a reset had put back.
func runtimes(orchestrator inventory.Orchestrator, runtime string) []scripts.RuntimeConfig {
	if orchestrator == inventory.Kubernetes {
		return nil
	}
	if runtime == inventory.RuntimeDocker {
		return []scripts.RuntimeConfig{{Name: "docker", Binary: "dockerd", Service: "docker", ConfigFiles: []string{"/etc/docker/daemon.json"}}}
	}
	return []scripts.RuntimeConfig{{Name: "containerd", Binary: "containerd", Service: "containerd",
		ConfigFiles: []string{"/etc/containerd/config.toml", "/etc/containerd/conf.d/99-nvidia.toml"}}}
}

// FabricManagerPackage is the fabric manager's package for a driver
// release: one package per branch up to R570, one name for all from R580.
func (w Want) FabricManagerPackage(release string) string {
	if w.Family.PackageManager == osfamily.Dnf {
		return "nvidia-fabric-manager"
	}
	branch, _, _ := strings.Cut(release, ".")
	if b, err := strconv.Atoi(branch); err == nil && b < 580 {
		return "nvidia-fabricmanager-" + branch
	}
	return "nvidia-fabricmanager"
}

// NeedsFabricManager: asked for, or auto on an NVSwitch system (the PCI bus,
// the driver's view, or a DGX).
func (w Want) NeedsFabricManager(choice string, s *State) bool {
	switch choice {
	case inventory.FabricManagerAlways:
		return true
	case inventory.FabricManagerNever:
		return false
	}
	return s.NVSwitchPCI > 0 || s.NVSwitchDriver > 0 || s.DGX
}

// CheckCUDA says whether driver (the release installed, or in dry-run the
// one asked for) can run the CUDA toolkit. A CUDA release newer than the
// compatibility table passes: the inventory's validation warned about it.
func (w Want) CheckCUDA(driver string) error {
	if w.CUDA == "" {
		return nil
	}
	d, err := compat.ParseDriver(driver)
	if err != nil {
		return fmt.Errorf("driver %q: %w", driver, err)
	}
	ok, err := compat.Satisfies(d, w.CUDA)
	switch {
	case errors.Is(err, compat.ErrUnknownCUDA):
		return nil
	case err != nil:
		return err
	case !ok:
		min, _ := compat.MinDriver(w.CUDA)
		return fmt.Errorf("CUDA %s needs driver %s or newer; the driver is %s", w.CUDA, min, driver)
	}
	return nil
}
