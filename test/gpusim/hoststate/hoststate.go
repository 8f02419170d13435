// Package hoststate reads the state of a lab host that the GPU SIMULATOR
// keeps in ordinary files on that host: which capture it replays, which
// driver the stand-in packages installed, which one the last boot "loaded"
// (/sys/module/nvidia/version, set up by gpusim-boot.service), and whether
// the stand-in nvidia-persistenced runs in persistence mode. The stand-in
// binaries (cmd/nvidia-smi, cmd/nvidia-persistenced) read it. Test tooling
// only, never shipped; standard library only.
package hoststate

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Files of the simulation on a host. Root (GPUSIM_ROOT, for unit tests) is
// prepended to each.
const (
	// CaptureFile names the capture the host replays: its first line is a
	// path prefix on the host (/usr/share/gpusim/captures/h100-80gb-hbm3__drv590.48.01).
	CaptureFile = "/etc/gpusim/capture"
	// HardwareFile marks a host with simulated hardware (gpusim.InstallHardware):
	// key=value lines (nvswitches=, nouveau=). Without it, nvidia-smi replays the
	// capture as recorded (gpusim.Install, the replay-only simulation).
	HardwareFile = "/etc/gpusim/hardware.conf"
	// FailInstallFile, while it exists, makes the stand-in kernel module
	// packages fail to install (their postinst fails like a DKMS build).
	FailInstallFile = "/etc/gpusim/fail-install"
	// MismatchFile is the replay-only simulation's switch: nvidia-smi reports a
	// driver/library version mismatch while it exists.
	MismatchFile = "/etc/gpusim/mismatch"
	// GPULostFile is the hardware simulation's broken GPU: while it exists,
	// nvidia-smi cannot reach the first GPU ("Unable to determine the
	// device handle"), as when a GPU falls off the bus (XID 79).
	GPULostFile = "/etc/gpusim/gpu-lost"
	// HangFile is a wedged GPU: while it exists, nvidia-smi never answers
	// (it blocks until killed), as on a GPU stuck after an XID error.
	HangFile = "/etc/gpusim/hang"
	// SlowInstallFile makes the stand-in kernel module packages' postinst
	// take as many seconds as the file says, like a long DKMS build.
	SlowInstallFile = "/etc/gpusim/slow-install"
	// ComputeAppsFile lists processes computing on the GPUs, as nvidia-smi
	// --query-compute-apps=pid,process_name,used_memory prints them (CSV
	// lines); none while it does not exist.
	ComputeAppsFile = "/etc/gpusim/compute-apps"
	// InstalledDriverFile holds "VERSION FLAVOR" (open or proprietary) of the
	// kernel module on disk: written by the stand-in DKMS packages' postinst,
	// removed by their postrm.
	InstalledDriverFile = "/var/lib/gpusim/installed-driver"
	// LoadedDriverFile is the loaded module's version (the kernel's view).
	LoadedDriverFile = "/sys/module/nvidia/version"
	// LoadedFlavorFile holds the loaded module's flavor, written at boot.
	LoadedFlavorFile = "/run/gpusim/loaded-flavor"
	// PersistencedPIDFile is where nvidia-persistenced records its pid.
	PersistencedPIDFile = "/run/nvidia-persistenced/nvidia-persistenced.pid"
	// MIGStateFile is the simulated GPUs' MIG modes and instances (JSON,
	// written by the stand-in nvidia-smi); the instances it holds are of the
	// boot it names: a later boot finds none, and the pending modes current.
	MIGStateFile = "/var/lib/gpusim/mig.json"
	// MIGNeedsResetFile makes a MIG mode change wait for a GPU reset or a
	// reboot, as on Ampere (A100, A30); without it the change is immediate,
	// as on Hopper.
	MIGNeedsResetFile = "/etc/gpusim/mig-needs-reset"
	// BootIDFile is the kernel's id of this boot.
	BootIDFile = "/proc/sys/kernel/random/boot_id"
	// NVMLDir holds the stand-in NVML library (libnvidia-ml.so.1 ->
	// libnvidia-ml.so.VERSION), where Debian keeps NVIDIA's libraries.
	NVMLDir = "/usr/lib/%s/nvidia/current"
)

// Host reads the simulation's files below Root ("" on a lab host).
type Host struct{ Root string }

// FromEnv is the host this process runs on: GPUSIM_ROOT, for tests, moves it.
func FromEnv() Host { return Host{Root: os.Getenv("GPUSIM_ROOT")} }

func (h Host) path(p string) string { return filepath.Join(h.Root, p) }

// FirstLine is the first line of file p, trimmed ("" when unreadable).
func (h Host) FirstLine(p string) string {
	b, err := os.ReadFile(h.path(p))
	if err != nil {
		return ""
	}
	line, _, _ := strings.Cut(string(b), "\n")
	return strings.TrimSpace(line)
}

// ReadFile is file p's content ("" when unreadable).
func (h Host) ReadFile(p string) string {
	b, _ := os.ReadFile(h.path(p))
	return string(b)
}

// Exists says whether one of the files above exists.
func (h Host) Exists(p string) bool {
	_, err := os.Stat(h.path(p))
	return err == nil
}

// Capture is the capture's path prefix, rooted ("" when none is set up).
func (h Host) Capture() string {
	p := h.FirstLine(CaptureFile)
	if p == "" {
		return ""
	}
	return h.path(p)
}

// Hardware is the simulated hardware's settings; nil for a replay-only host.
func (h Host) Hardware() map[string]string {
	b, err := os.ReadFile(h.path(HardwareFile))
	if err != nil {
		return nil
	}
	m := map[string]string{}
	for line := range strings.Lines(string(b)) {
		k, v, ok := strings.Cut(strings.TrimSpace(line), "=")
		if ok && !strings.HasPrefix(k, "#") {
			m[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return m
}

// WriteFile replaces file p (creating its directory).
func (h Host) WriteFile(p string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(h.path(p)), 0o755); err != nil {
		return err
	}
	tmp := h.path(p) + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, h.path(p))
}

// Loaded is the version and flavor of the module in memory ("" for none).
func (h Host) Loaded() (version, flavor string) {
	return h.FirstLine(LoadedDriverFile), h.FirstLine(LoadedFlavorFile)
}

// Library is the version of the NVML library on disk ("" for none).
func (h Host) Library() string {
	for _, triplet := range []string{"x86_64-linux-gnu", "aarch64-linux-gnu"} {
		dir := h.path(strings.Replace(NVMLDir, "%s", triplet, 1))
		target, err := os.Readlink(filepath.Join(dir, "libnvidia-ml.so.1"))
		if err != nil {
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, target)); err != nil {
			continue
		}
		if v, ok := strings.CutPrefix(filepath.Base(target), "libnvidia-ml.so."); ok {
			return v
		}
	}
	return ""
}

// PersistenceMode says whether a stand-in nvidia-persistenced runs and keeps
// persistence mode on: its pid file names a live nvidia-persistenced whose
// command line does not end up with --no-persistence-mode (on is its default).
func (h Host) PersistenceMode() bool {
	pid, err := strconv.Atoi(h.FirstLine(PersistencedPIDFile))
	if err != nil || pid <= 0 {
		return false
	}
	cmdline, err := os.ReadFile(filepath.Join(h.Root, "/proc", strconv.Itoa(pid), "cmdline"))
	if err != nil || len(cmdline) == 0 {
		return false
	}
	args := strings.Split(string(bytes.TrimRight(cmdline, "\x00")), "\x00")
	if filepath.Base(args[0]) != "nvidia-persistenced" {
		return false
	}
	on := true
	for _, a := range args[1:] {
		switch a {
		case "--persistence-mode", "-p":
			on = true
		case "--no-persistence-mode":
			on = false
		}
	}
	return on
}
