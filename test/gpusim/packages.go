package gpusim

import (
	"fmt"
	"os"
	"path"
	"strings"

	"github.com/gpukit/gpukit/pkg/nvidia"
	"github.com/gpukit/gpukit/test/aptrepo"
	"github.com/gpukit/gpukit/test/gpusim/hoststate"
)

// The stand-in packages: NVIDIA's package names and versions, labelled
// contents. Each file says it belongs to the gpukit GPU SIMULATOR.

// DriverVersions are the driver releases in the stand-in CUDA repository
// (Debian package versions), oldest first: gpukit pins one, and apt sees the
// newer one as an upgrade it must not take.
func DriverVersions() []string { return []string{"580.95.05-1", "590.48.01-1"} }

// ContainerToolkitVersions are the NVIDIA Container Toolkit releases in the
// stand-in libnvidia-container repository, oldest first.
func ContainerToolkitVersions() []string { return []string{"1.19.1-1", "1.20.0-1"} }

// CUDAToolkit is the CUDA toolkit release in the stand-in CUDA repository
// (package cuda-toolkit-13-0).
const CUDAToolkit = "13.0"

// Label is in every stand-in file, package description and repository.
const Label = "gpukit GPU SIMULATOR"

const maintainer = "gpukit GPU SIMULATOR <gpusim@gpukit.invalid>"

const homepage = "https://gpukit.invalid/gpusim"

// describe is a stand-in's description: NVIDIA's synopsis, saying what it is.
func describe(summary string) string {
	return summary + " (" + Label + " stand-in)\n" +
		"Test-only stand-in carrying the name and version of NVIDIA's package, built\n" +
		"by gpukit's GPU simulator (test/gpusim) for the local lab, which has no GPUs.\n" +
		"It contains no NVIDIA software."
}

// asStandIns gives debs the simulator's maintainer and homepage, and the
// section of Debian's NVIDIA libraries where they name none.
func asStandIns(debs []aptrepo.Deb) []aptrepo.Deb {
	for i := range debs {
		debs[i].Maintainer, debs[i].Homepage = maintainer, homepage
		if debs[i].Section == "" {
			debs[i].Section = "contrib/libs"
		}
	}
	return debs
}

// arch is the machine's architecture in the names NVIDIA and Debian use.
type arch struct {
	Deb, CUDA, Triplet string // amd64, x86_64, x86_64-linux-gnu
}

func archFor(goarch string) (arch, error) {
	switch goarch {
	case "amd64":
		return arch{"amd64", "x86_64", "x86_64-linux-gnu"}, nil
	case "arm64":
		return arch{"arm64", "sbsa", "aarch64-linux-gnu"}, nil
	}
	return arch{}, fmt.Errorf("gpusim: no stand-in repository for architecture %s (NVIDIA publishes x86_64 and sbsa)", goarch)
}

// binaries are the stand-in programs built from test/gpusim/cmd.
type binaries struct {
	NvidiaSMI, Persistenced, CTK, ContainerRuntime []byte
}

func file(path string, mode os.FileMode, data string) aptrepo.File {
	return aptrepo.File{Path: path, Mode: mode, Data: []byte(data)}
}

func symlink(path, target string) aptrepo.File { return aptrepo.File{Path: path, Link: target} }

func standIn(what string) string {
	return fmt.Sprintf("This is the %s's stand-in for %s (test only, not NVIDIA software).\n", Label, what)
}

func script(body string) string {
	return "#!/bin/sh\n# " + Label + " (test/gpusim): maintainer script of a stand-in package.\nset -e\n" + body
}

// cudaPackages are the stand-in CUDA repository's packages.
func cudaPackages(a arch, bin binaries, keyring []byte, cudaURL string) []aptrepo.Deb {
	var out []aptrepo.Deb
	libdir := "/usr/lib/" + a.Triplet + "/nvidia/current"
	for _, v := range DriverVersions() {
		u := nvidia.Upstream(v)
		branch, _, _ := strings.Cut(u, ".")
		eq := " (= " + v + ")"
		out = append(out,
			aptrepo.Deb{Name: "nvidia-open", Version: v, Arch: a.Deb, Section: "contrib/metapackages",
				Description: describe("NVIDIA driver metapackage, open kernel modules"),
				Depends:     "nvidia-driver" + eq + ", nvidia-kernel-open-dkms" + eq},
			aptrepo.Deb{Name: "cuda-drivers", Version: v, Arch: a.Deb, Section: "contrib/metapackages",
				Description: describe("CUDA driver metapackage, proprietary kernel modules"),
				Depends:     "cuda-drivers-" + branch + eq},
			aptrepo.Deb{Name: "cuda-drivers-" + branch, Version: v, Arch: a.Deb, Section: "contrib/metapackages",
				Description: describe("CUDA driver metapackage for branch " + branch),
				Depends:     "nvidia-driver" + eq + ", nvidia-kernel-dkms" + eq},
			aptrepo.Deb{Name: "nvidia-driver", Version: v, Arch: a.Deb, Section: "contrib/metapackages",
				Description: describe("NVIDIA driver metapackage"),
				Depends: "nvidia-driver-libs" + eq + ", nvidia-smi" + eq +
					", nvidia-kernel-open-dkms" + eq + " | nvidia-kernel-dkms" + eq,
				// as in Debian's packaging: --no-install-recommends leaves it out
				Recommends: "nvidia-persistenced",
				Files:      []aptrepo.File{file("/usr/share/doc/nvidia-driver/README.gpusim", 0o644, standIn("NVIDIA driver "+u))}},
			kernelModule(v, "open", a),
			kernelModule(v, "proprietary", a),
			aptrepo.Deb{Name: "nvidia-kernel-support", Version: v, Arch: a.Deb,
				Description: describe("NVIDIA binary kernel module support files"),
				Files:       []aptrepo.File{file("/usr/share/doc/nvidia-kernel-support/README.gpusim", 0o644, standIn("nvidia-kernel-support "+u))}},
			aptrepo.Deb{Name: "firmware-nvidia-gsp", Version: v, Arch: a.Deb, Section: "contrib/kernel",
				Description: describe("NVIDIA GSP firmware"),
				Files:       []aptrepo.File{file("/lib/firmware/nvidia/"+u+"/README.gpusim", 0o644, standIn("the GSP firmware of driver "+u))}},
			aptrepo.Deb{Name: "nvidia-driver-libs", Version: v, Arch: a.Deb, Section: "contrib/metapackages",
				Description: describe("NVIDIA driver libraries metapackage"),
				Depends:     "libcuda1" + eq + ", libnvidia-ml1" + eq},
			library("libnvidia-ml1", "libnvidia-ml.so", "NVIDIA Management Library (NVML)", v, a, libdir),
			library("libcuda1", "libcuda.so", "NVIDIA CUDA driver library", v, a, libdir),
			aptrepo.Deb{Name: "nvidia-smi", Version: v, Arch: a.Deb, Section: "contrib/utils",
				Description: describe("NVIDIA System Management Interface"), Depends: "libnvidia-ml1" + eq,
				Files: []aptrepo.File{{Path: "/usr/bin/nvidia-smi", Mode: 0o755, Data: bin.NvidiaSMI}}},
			persistenced(v, a, bin),
			fabricManager(v, a),
		)
	}
	out = append(out,
		aptrepo.Deb{Name: "cuda-toolkit-13-0", Version: "13.0.2-1", Arch: a.Deb, Section: "contrib/metapackages",
			Description: describe("CUDA Toolkit 13.0 metapackage"), Depends: "cuda-nvcc-13-0 (>= 13.0.88)"},
		aptrepo.Deb{Name: "cuda-nvcc-13-0", Version: "13.0.88-1", Arch: a.Deb, Section: "contrib/devel",
			Description: describe("CUDA nvcc"),
			Files: []aptrepo.File{
				file("/usr/local/cuda-13.0/bin/nvcc", 0o755, nvccScript),
				file("/usr/local/cuda-13.0/README.gpusim", 0o644, standIn("the CUDA toolkit 13.0")),
			}},
		aptrepo.Deb{Name: "cuda-keyring", Version: "1.1-1", Arch: "all", Section: "contrib/admin",
			Description: describe("NVIDIA CUDA repository keyring (the simulator's TEST key)"),
			Files: []aptrepo.File{
				{Path: "/usr/share/keyrings/cuda-archive-keyring.gpg", Mode: 0o644, Data: keyring},
				// NVIDIA's package names NVIDIA's server; gpukit points the source at the mirror.
				file("/etc/apt/sources.list.d/cuda-debian12-"+a.CUDA+".list", 0o644,
					"# "+Label+" stand-in of cuda-keyring's source: NVIDIA's URL, which gpukit points at the mirror\n"+
						"deb [signed-by=/usr/share/keyrings/cuda-archive-keyring.gpg] "+cudaURL+" /\n"),
				file("/etc/apt/preferences.d/cuda-repository-pin-600", 0o644,
					"# "+Label+" stand-in of cuda-keyring's pin\nPackage: *\nPin: release l=NVIDIA CUDA\nPin-Priority: 600\n"),
			}},
	)
	return asStandIns(out)
}

// kernelModule is nvidia-kernel-open-dkms or nvidia-kernel-dkms: no module is
// built; the postinst records the version "on disk", which the simulated
// kernel loads at the next boot (gpusim-boot.service). While
// /etc/gpusim/fail-install exists the postinst fails like a DKMS build; while
// /etc/gpusim/slow-install exists it first takes the seconds it says.
func kernelModule(v, flavor string, a arch) aptrepo.Deb {
	u := nvidia.Upstream(v)
	name, other, summary := "nvidia-kernel-open-dkms", "nvidia-kernel-dkms", "NVIDIA open GPU kernel modules (DKMS)"
	if flavor == "proprietary" {
		name, other, summary = "nvidia-kernel-dkms", "nvidia-kernel-open-dkms", "NVIDIA proprietary kernel module (DKMS)"
	}
	deps := "nvidia-kernel-support (= " + v + ")"
	if flavor == "open" {
		deps += ", firmware-nvidia-gsp (= " + v + ")"
	}
	record := u + " " + flavor
	postinst := script(fmt.Sprintf(`if [ "$1" = configure ]; then
  k=$(uname -r)
  if [ -e %[9]s ]; then
    echo "%[4]s: building the module (slowly: %[9]s)"
    sleep "$(cat %[9]s)"
  fi
  if [ -e %[6]s ]; then
    echo "Building module(s)...(bad exit status: 2)" >&2
    echo "Error! Bad return status for module build on kernel: $k (%[3]s)" >&2
    echo "Consult /var/lib/dkms/nvidia/%[1]s/build/make.log for more information." >&2
    echo "%[4]s: this failure is simulated: %[6]s exists" >&2
    exit 10
  fi
  mkdir -p %[8]s
  echo "%[2]s" >%[7]s.new
  mv %[7]s.new %[7]s
  echo "%[4]s: nvidia %[1]s (%[5]s modules) recorded as built for kernel $k; it loads at the next boot"
fi
`, u, record, a.CUDA, Label, flavor, hoststate.FailInstallFile, hoststate.InstalledDriverFile, path.Dir(hoststate.InstalledDriverFile),
		hoststate.SlowInstallFile))
	postrm := script(fmt.Sprintf(`case "$1" in
remove | purge)
  if [ "$(cat %[2]s 2>/dev/null)" = "%[1]s" ]; then rm -f %[2]s; fi ;;
esac
`, record, hoststate.InstalledDriverFile))
	return aptrepo.Deb{Name: name, Version: v, Arch: a.Deb, Section: "contrib/kernel", Description: describe(summary),
		Depends: deps, Conflicts: other,
		Files:   []aptrepo.File{file("/usr/src/nvidia-"+u+"/README.gpusim", 0o644, standIn("the "+flavor+" kernel module sources of driver "+u+"; nothing is built"))},
		Scripts: map[string]string{"postinst": postinst, "postrm": postrm}}
}

// library is a stand-in shared library: a text file named like the real one,
// kept where Debian's NVIDIA packages put them (not a directory ldconfig scans).
func library(pkg, soname, summary, v string, a arch, dir string) aptrepo.Deb {
	u := nvidia.Upstream(v)
	return aptrepo.Deb{Name: pkg, Version: v, Arch: a.Deb, Description: describe(summary), Files: []aptrepo.File{
		file(dir+"/"+soname+"."+u, 0o644, standIn(soname+"."+u+": not a library")),
		symlink(dir+"/"+soname+".1", soname+"."+u),
	}}
}

const persistencedUnit = `# ` + Label + ` stand-in of NVIDIA's unit (test only).
[Unit]
Description=NVIDIA Persistence Daemon
Wants=syslog.target

[Service]
Type=forking
PIDFile=` + hoststate.PersistencedPIDFile + `
ExecStart=/usr/bin/nvidia-persistenced --user nvidia-persistenced --no-persistence-mode --verbose
ExecStopPost=/bin/rm -rf /run/nvidia-persistenced

[Install]
WantedBy=multi-user.target
`

func persistenced(v string, a arch, bin binaries) aptrepo.Deb {
	postinst := script(`if [ "$1" = configure ]; then
  if ! getent passwd nvidia-persistenced >/dev/null; then
    useradd --system --home-dir /run/nvidia-persistenced --no-create-home --shell /usr/sbin/nologin \
      --comment "NVIDIA Persistence Daemon" nvidia-persistenced
  fi
  if [ -d /run/systemd/system ]; then
    systemctl daemon-reload || true
    systemctl enable nvidia-persistenced.service >/dev/null 2>&1 || true
    # like deb-systemd-invoke: a daemon that cannot start yet (no driver loaded) fails the unit, not the install
    systemctl restart nvidia-persistenced.service >/dev/null 2>&1 || true
  fi
fi
`)
	prerm := script(`if [ "$1" = remove ] && [ -d /run/systemd/system ]; then
  systemctl stop nvidia-persistenced.service >/dev/null 2>&1 || true
fi
`)
	postrm := script(`if [ "$1" = remove ] || [ "$1" = purge ]; then
  if [ -d /run/systemd/system ]; then
    systemctl disable nvidia-persistenced.service >/dev/null 2>&1 || true
    systemctl daemon-reload || true
  fi
fi
`)
	return aptrepo.Deb{Name: "nvidia-persistenced", Version: v, Arch: a.Deb, Section: "contrib/utils",
		Description: describe("daemon to maintain persistent software state in the NVIDIA driver"),
		Files: []aptrepo.File{
			{Path: "/usr/bin/nvidia-persistenced", Mode: 0o755, Data: bin.Persistenced},
			file("/usr/share/gpusim/nvidia-persistenced.version", 0o644, nvidia.Upstream(v)+"\n# the version of this "+Label+" stand-in\n"),
			file("/lib/systemd/system/nvidia-persistenced.service", 0o644, persistencedUnit),
		},
		Scripts: map[string]string{"postinst": postinst, "prerm": prerm, "postrm": postrm}}
}

func fabricManager(v string, a arch) aptrepo.Deb {
	u := nvidia.Upstream(v)
	daemon := fmt.Sprintf(`#!/bin/sh
# %[2]s stand-in for NVIDIA's nv-fabricmanager %[1]s (test only): it checks what
# the real one needs (the driver loaded at exactly its version, NVSwitches the
# driver sees), then idles.
v=%[1]s
case "${1:-}" in -v | --version) echo "Fabric Manager version is : $v"; exit 0 ;; esac
loaded=$(cat %[3]s 2>/dev/null || true)
if [ -z "$loaded" ]; then
  echo "fabric manager: NVIDIA GPU driver is not loaded" >&2
  exit 1
fi
if [ "$loaded" != "$v" ]; then
  echo "fabric manager NVIDIA GPU driver interface version $v don't match with driver version $loaded. Please update with matching NVIDIA driver package." >&2
  exit 1
fi
if [ -z "$(ls /proc/driver/nvidia-nvswitch/devices 2>/dev/null)" ]; then
  echo "request to query NVSwitch device information from NVSwitch driver failed with error:WARNING Nothing to do" >&2
  exit 1
fi
echo "Successfully configured all the available NVSwitches to route GPU NVLink traffic (%[2]s)"
exec sleep infinity
`, u, Label, hoststate.LoadedDriverFile)
	unit := `# ` + Label + ` stand-in of NVIDIA's unit (test only).
[Unit]
Description=NVIDIA fabric manager service
After=network-online.target
Wants=network-online.target

[Service]
Type=simple
ExecStart=/usr/bin/nv-fabricmanager -c /usr/share/nvidia/nvswitch/fabricmanager.cfg

[Install]
WantedBy=multi-user.target
`
	return aptrepo.Deb{Name: "nvidia-fabricmanager", Version: v, Arch: a.Deb, Section: "contrib/utils",
		Description: describe("Fabric Manager for NVSwitch based systems"),
		Files: []aptrepo.File{
			file("/usr/bin/nv-fabricmanager", 0o755, daemon),
			file("/lib/systemd/system/nvidia-fabricmanager.service", 0o644, unit),
			file("/usr/share/nvidia/nvswitch/fabricmanager.cfg", 0o644, "# "+Label+" stand-in of fabricmanager.cfg\nFABRIC_MODE=0\n"),
		},
		Scripts: map[string]string{"postinst": script(`if [ "$1" = configure ] && [ -d /run/systemd/system ]; then systemctl daemon-reload || true; fi
`)}}
}

const nvccScript = `#!/bin/sh
# ` + Label + ` stand-in for NVIDIA's nvcc (CUDA 13.0), test only: it prints its
# version and compiles nothing.
case "${1:-}" in
--version | -V)
  cat <<'EOF'
nvcc: NVIDIA (R) Cuda compiler driver
Copyright (c) 2005-2025 NVIDIA Corporation
Built on Wed_Aug_20_01:58:59_PM_PDT_2025
Cuda compilation tools, release 13.0, V13.0.88
Build cuda_13.0.r13.0/compiler.36424714_0
EOF
  exit 0 ;;
esac
echo "nvcc (` + Label + ` stand-in): compiles nothing" >&2
exit 1
`

// runtimeConfig is the stand-in /etc/nvidia-container-runtime/config.toml:
// its top-level keys as in NVIDIA's default, swarm-resource commented out
// (cmd/nvidia-container-runtime reads it).
const runtimeConfig = "# " + Label + ` stand-in of the NVIDIA Container Runtime's configuration
#accept-nvidia-visible-devices-as-volume-mounts = false
#accept-nvidia-visible-devices-envvar-when-unprivileged = true
disable-require = false
supported-driver-capabilities = "compat32,compute,display,graphics,ngx,utility,video"
#swarm-resource = "DOCKER_RESOURCE_GPU"

[nvidia-container-runtime]
mode = "auto"
`

// toolkitPackages are the stand-in libnvidia-container repository's packages.
func toolkitPackages(a arch, bin binaries) []aptrepo.Deb {
	var out []aptrepo.Deb
	for _, v := range ContainerToolkitVersions() {
		u := nvidia.Upstream(v)
		eq := " (= " + v + ")"
		tool := func(name, what string) aptrepo.File {
			return file("/usr/bin/"+name, 0o755, fmt.Sprintf(`#!/bin/sh
# %[1]s stand-in for NVIDIA's %[2]s %[3]s (test only).
case "${1:-}" in --version | -v | version) echo "%[2]s version %[3]s (%[1]s stand-in)"; exit 0 ;; esac
echo "%[2]s (%[1]s stand-in): %[4]s" >&2
exit 1
`, Label, name, u, what))
		}
		out = append(out,
			aptrepo.Deb{Name: "libnvidia-container1", Version: v, Arch: a.Deb, Description: describe("NVIDIA container runtime library"),
				Files: []aptrepo.File{
					file("/usr/lib/"+a.Triplet+"/libnvidia-container/libnvidia-container.so."+u, 0o644, standIn("libnvidia-container.so."+u+": not a library")),
					symlink("/usr/lib/"+a.Triplet+"/libnvidia-container/libnvidia-container.so.1", "libnvidia-container.so."+u),
				}},
			aptrepo.Deb{Name: "libnvidia-container-tools", Version: v, Arch: a.Deb, Section: "utils",
				Description: describe("NVIDIA container runtime library (command-line tools)"), Depends: "libnvidia-container1" + eq,
				Files: []aptrepo.File{tool("nvidia-container-cli", "no GPU to hand to a container in the lab")}},
			aptrepo.Deb{Name: "nvidia-container-toolkit-base", Version: v, Arch: a.Deb, Section: "utils",
				Description: describe("NVIDIA Container Toolkit Base"),
				Files: []aptrepo.File{
					{Path: "/usr/bin/nvidia-ctk", Mode: 0o755, Data: bin.CTK},
					file("/usr/share/gpusim/nvidia-container-toolkit.version", 0o644, u+"\n# the version of this "+Label+" stand-in\n"),
					{Path: "/usr/bin/nvidia-container-runtime", Mode: 0o755, Data: bin.ContainerRuntime},
					file("/etc/nvidia-container-runtime/config.toml", 0o644, runtimeConfig),
				}},
			aptrepo.Deb{Name: "nvidia-container-toolkit", Version: v, Arch: a.Deb, Section: "utils",
				Description: describe("NVIDIA Container toolkit"),
				Depends:     "nvidia-container-toolkit-base" + eq + ", libnvidia-container-tools (>= " + v + "), libnvidia-container-tools (<< 2.0.0)",
				Files:       []aptrepo.File{tool("nvidia-container-runtime-hook", "no GPU to hand to a container in the lab")}},
		)
	}
	return asStandIns(out)
}

// DriverPackages are the stand-in packages a driver release (580.95.05) in
// a flavor ("open" or "proprietary") depends on, the metapackage first. apt
// resolves dependencies with candidate (newest) versions only, and the
// driver's packages depend on each other at exactly one version, as NVIDIA's
// do: to install a release older than the newest, apt must be given every
// one of them at that version (or a pin). nvidia-persistenced is only
// recommended (by nvidia-driver), as in Debian's packaging.
func DriverPackages(release, flavor string) []string {
	common := []string{"nvidia-driver", "nvidia-kernel-support", "nvidia-driver-libs", "libcuda1", "libnvidia-ml1", "nvidia-smi"}
	if flavor == "proprietary" {
		branch, _, _ := strings.Cut(release, ".")
		return append([]string{"cuda-drivers", "cuda-drivers-" + branch, "nvidia-kernel-dkms"}, common...)
	}
	return append([]string{"nvidia-open", "nvidia-kernel-open-dkms", "firmware-nvidia-gsp"}, common...)
}
