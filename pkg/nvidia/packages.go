package nvidia

import (
	"github.com/gpukit/gpukit/pkg/facts"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/osfamily"
	"github.com/gpukit/gpukit/pkg/scripts"
)

// PackageSets are the packages the NVIDIA layer installs on a host it
// decided w for (probed as f), by source: the kernel headers and build
// tools DKMS needs (nvidia/prepare), the driver, the fabric manager (on
// every GPU host unless the inventory says never: whether a host has
// NVSwitches is known only once its driver runs), the persistence daemon,
// the CUDA toolkit and the container toolkit. The names are the ones the
// phases' scripts install (TestPackageSetsAreWhatTheScriptsInstall).
func (w Want) PackageSets(inv *inventory.Inventory, f *facts.Facts) []scripts.PackageSet {
	if !w.GPU {
		return nil
	}
	var out []scripts.PackageSet
	distro := func(names []string, version, why string) {
		out = append(out, scripts.PackageSet{Family: w.Family, Names: names, Version: version, For: why})
	}
	if w.DKMS {
		// nvidia/prepare installs the running kernel's headers only where
		// they are missing.
		headers := []string{"linux-headers-" + f.Kernel}
		tools := []string{"dkms", "build-essential"}
		if w.Family.PackageManager == osfamily.Dnf {
			headers = []string{"kernel-devel-" + f.Kernel, "kernel-headers-" + f.Kernel}
			tools = []string{"dkms", "gcc", "make", "elfutils-libelf-devel"}
		}
		if !f.KernelHeaders {
			distro(headers, "", "DKMS: headers of kernel "+f.Kernel)
		}
		distro(tools, "", "DKMS")
	}
	driver := scripts.PackageSet{Family: w.Family, Names: w.Packages, Version: w.Driver, For: "NVIDIA driver " + w.Driver}
	if w.Source == inventory.DriverSourceCUDARepo {
		driver.Repo, driver.Key, driver.KeyURL = w.Repo.RepoURL, w.Repo.Key, w.Repo.RepoURL+w.Repo.Key.File
		driver.Mirror, driver.Path = "nvidia", "cuda/repos/"+w.Family.CUDARepo+"/"+w.Repo.Arch+"/"
		driver.KeyPath = driver.Path + w.Repo.Key.File
	} else {
		driver.Components = w.Repo.Components
	}
	out = append(out, driver)
	fm, persistenced := driver, driver
	// The distributions package no fabric manager of NVIDIA's releases:
	// only a host asked to have one needs one from there.
	if fmChoice := inv.Cluster.Spec.NVIDIA.FabricManager; fmChoice == inventory.FabricManagerAlways ||
		fmChoice != inventory.FabricManagerNever && w.Source == inventory.DriverSourceCUDARepo {
		fm.Names, fm.For = []string{w.FabricManagerPackage(w.Driver)}, "NVIDIA fabric manager "+w.Driver+" (NVSwitch systems)"
		out = append(out, fm)
	}
	persistenced.Names, persistenced.For = []string{"nvidia-persistenced"}, "NVIDIA persistence daemon"
	out = append(out, persistenced)
	if w.CUDA != "" {
		cuda := driver
		cuda.Names, cuda.Version, cuda.For = []string{"cuda-toolkit-" + scripts.CUDAToolkitParams{CUDA: w.CUDA}.PackageVersion()}, "", "CUDA toolkit "+w.CUDA
		out = append(out, cuda)
	}
	ct := w.ContainerToolkit
	toolkit := scripts.PackageSet{Family: w.Family, Repo: ct.RepoURL + "stable/deb/" + ct.DebArch + "/", Key: ct.Key, KeyURL: ct.RepoURL + ct.Key.File,
		Names: ct.Packages(), Version: ct.Version, For: "NVIDIA container toolkit " + ct.Version}
	toolkit.Mirror, toolkit.Path, toolkit.KeyPath = "nvidia", "libnvidia-container/stable/deb/"+ct.DebArch+"/", "libnvidia-container/"+ct.Key.File
	if w.Family.PackageManager == osfamily.Dnf {
		toolkit.Repo, toolkit.Path = ct.RepoURL+"stable/rpm/"+f.Arch+"/", "libnvidia-container/stable/rpm/"+f.Arch+"/"
	}
	return append(out, toolkit)
}
