package gpusim

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	_ "embed"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/gpukit/gpukit/pkg/ssh"
	"github.com/gpukit/gpukit/test/gpusim/hoststate"
	"github.com/gpukit/gpukit/test/gpusim/migsim"
)

// Hardware is what one full lab host simulates: GPUs, NVSwitches, what its
// kernel loads at boot. Everything is set up at the host level (files, a
// systemd unit, mounts inside the host's own mount namespace); gpukit runs
// unchanged against it. The driver itself comes from the stand-in packages
// (Publish), installed by gpukit like the real ones.
type Hardware struct {
	// Capture is the real nvidia-smi recording the host replays; any path
	// prefix on this machine (the fixtures' or one of your own). Its GPUs
	// become the host's PCI devices (address, device id, class).
	Capture Capture
	// NVSwitches is the number of NVSwitch bridges on the PCI bus (HGX/DGX:
	// the fabric manager is needed); 0 for none.
	NVSwitches int
	// Nouveau: the kernel loads nouveau at boot (holding the GPUs, so the
	// nvidia module does not load) until a boot after nouveau is
	// blacklisted in /etc/modprobe.d.
	Nouveau bool
	// NoKernelHeaders leaves out the running kernel's headers. By default the
	// host gets /lib/modules/$(uname -r)/build (a labelled stand-in): the lab
	// runs this machine's kernel, for which Debian has no linux-headers package.
	NoKernelHeaders bool
	// RuntimeModules: modprobe loads and unloads the simulated modules, as on
	// a real host (nothing holding them, nouveau away), so a new driver gets
	// into memory without a reboot. Without it the driver changes only at a
	// boot: the lab's hosts as most tests have them, where every driver
	// change reboots.
	RuntimeModules bool
}

// Runner runs scripts on a host (pkg/ssh.Client does); InstallHardware runs
// them as root (sudo for another login user).
type Runner interface {
	Run(ctx context.Context, cmd ssh.Command) (ssh.Result, error)
}

//go:embed boot.sh
var bootScript []byte

const bootUnit = `# ` + Label + ` (test/gpusim, test only): the simulated GPUs of this lab host.
[Unit]
Description=gpukit GPU SIMULATOR: simulated NVIDIA PCI devices and kernel module state (test only)
DefaultDependencies=no
After=local-fs.target
Before=sysinit.target nvidia-persistenced.service nvidia-fabricmanager.service

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/usr/lib/gpusim/boot

[Install]
WantedBy=sysinit.target
`

// noModule makes `modprobe nvidia` and `modprobe -r nvidia` fail: the
// simulated module changes only at a boot.
const noModule = `# ` + Label + ` (test/gpusim, test only): no real NVIDIA kernel module can be loaded in the
# lab; the simulated one is "loaded" at boot (gpusim-boot.service), and stays until the next.
install nvidia /bin/sh -c 'echo "gpukit GPU SIMULATOR: no real nvidia module in the lab; the installed driver loads at the next boot" >&2; exit 1'
install nvidia-uvm /bin/sh -c 'echo "gpukit GPU SIMULATOR: no real nvidia module in the lab" >&2; exit 1'
install nvidia-modeset /bin/sh -c 'echo "gpukit GPU SIMULATOR: no real nvidia module in the lab" >&2; exit 1'
install nvidia-drm /bin/sh -c 'echo "gpukit GPU SIMULATOR: no real nvidia module in the lab" >&2; exit 1'
remove nvidia /bin/sh -c 'echo "gpukit GPU SIMULATOR: this host's simulated nvidia module goes only at a reboot (hardware: modules=boot)" >&2; exit 1'
remove nvidia-uvm /bin/sh -c 'echo "gpukit GPU SIMULATOR: this host's simulated modules go only at a reboot (hardware: modules=boot)" >&2; exit 1'
remove nvidia-modeset /bin/sh -c 'echo "gpukit GPU SIMULATOR: this host's simulated modules go only at a reboot (hardware: modules=boot)" >&2; exit 1'
remove nvidia-drm /bin/sh -c 'echo "gpukit GPU SIMULATOR: this host's simulated modules go only at a reboot (hardware: modules=boot)" >&2; exit 1'
`

// runtimeModules hands modprobe's loads and unloads of the simulated
// modules to the boot script, which keeps them as a kernel would (see
// boot.sh).
const runtimeModules = `# ` + Label + ` (test/gpusim, test only): modprobe loads and unloads the simulated NVIDIA
# modules (hardware: modules=runtime); /usr/lib/gpusim/boot keeps them as a kernel would.
install nvidia /usr/lib/gpusim/boot load nvidia
install nvidia-uvm /usr/lib/gpusim/boot load nvidia_uvm
install nvidia-modeset /usr/lib/gpusim/boot load nvidia_modeset
install nvidia-drm /usr/lib/gpusim/boot load nvidia_drm
remove nvidia /usr/lib/gpusim/boot unload nvidia
remove nvidia-uvm /usr/lib/gpusim/boot unload nvidia_uvm
remove nvidia-modeset /usr/lib/gpusim/boot unload nvidia_modeset
remove nvidia-drm /usr/lib/gpusim/boot unload nvidia_drm
`

// installScript unpacks the simulation ($1: a base64 tar.gz) and runs its
// boot unit now: the host has these GPUs from now on, as if it had booted
// with them (what is "loaded" stays as it is until the next boot).
const installScript = `set -euo pipefail
if [ ! -d /run/systemd/system ]; then
  echo "gpusim: the simulated hardware needs a full lab host (systemd), not a light one" >&2
  exit 3
fi
rm -rf /usr/share/gpusim/captures /usr/share/gpusim/pci /usr/share/gpusim/gpus
printf '%s' "$1" | base64 -d | tar -xz --no-same-owner -C /
# a replay-only nvidia-smi (gpusim.Install) is not the driver's: the driver packages bring one
if [ -e /usr/bin/nvidia-smi ] && ! dpkg -S /usr/bin/nvidia-smi >/dev/null 2>&1; then rm -f /usr/bin/nvidia-smi; fi
rm -f ` + hoststate.MismatchFile + `
if [ "$2" = yes ]; then
  k=$(uname -r)
  if [ ! -e "/lib/modules/$k/build" ]; then
    mkdir -p "/lib/modules/$k/build"
    echo "gpukit GPU SIMULATOR (test only): stand-in for the headers of the running kernel $k" >"/lib/modules/$k/build/README.gpusim"
  fi
fi
systemctl daemon-reload
systemctl enable --quiet gpusim-boot.service
systemctl restart gpusim-boot.service
`

// InstallHardware gives a full lab host simulated GPUs (see Hardware),
// replacing earlier simulated hardware. In one round trip, as root:
//
//	/etc/gpusim/hardware.conf           the settings (nouveau=, nvswitches=, capture=)
//	/etc/gpusim/capture                 the capture's prefix on the host
//	/usr/share/gpusim/captures/         the capture's files
//	/usr/share/gpusim/pci/ADDR/         the PCI devices (vendor, device, class, config, ...)
//	/usr/share/gpusim/gpus/ADDR/        /proc/driver/nvidia/gpus/ADDR/information
//	/usr/lib/gpusim/boot                run at every boot by gpusim-boot.service (enabled)
//	/usr/lib/modprobe.d/gpusim.conf     modprobe (-r) nvidia: the boot script, or fails (RuntimeModules)
//	/lib/modules/$(uname -r)/build      unless NoKernelHeaders
//
// and runs the boot unit at once (the host "has" the GPUs from now on).
func InstallHardware(ctx context.Context, host Runner, hw Hardware) error {
	payload, err := hardwareFiles(hw)
	if err != nil {
		return err
	}
	headers := "yes"
	if hw.NoKernelHeaders {
		headers = "no"
	}
	res, err := host.Run(ctx, ssh.Command{Name: "install the GPU simulator's hardware", Script: installScript,
		Args: []string{base64.StdEncoding.EncodeToString(payload), headers}, Sudo: true})
	if err != nil {
		return fmt.Errorf("gpusim: %w\n%s%s", err, res.Stdout, res.Stderr)
	}
	return nil
}

// hardwareFiles is the simulation's files as a tar.gz for the host's root.
func hardwareFiles(hw Hardware) ([]byte, error) {
	c := hw.Capture
	files, err := c.Files()
	if err != nil {
		return nil, err
	}
	gpus, err := c.GPUs()
	if err != nil {
		return nil, err
	}
	name := filepath.Base(c.Prefix)
	onHost := "/usr/share/gpusim/captures/" + name
	out := map[string][]byte{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		out[filepath.Join("/usr/share/gpusim/captures", filepath.Base(f))] = b
	}
	// The model's -lgip, where one was captured: the stand-in's MIG.
	if b, err := os.ReadFile(migsim.LGIPFile(c.Prefix)); err == nil {
		out[filepath.Join("/usr/share/gpusim/captures", filepath.Base(migsim.LGIPFile(c.Prefix)))] = b
	}
	out[hoststate.CaptureFile] = []byte(onHost + "\n")
	yes := map[bool]string{true: "yes", false: "no"}
	out[hoststate.HardwareFile] = fmt.Appendf(nil, "# %s (test/gpusim, test only): this host's simulated hardware.\n"+
		"# Read at boot by /usr/lib/gpusim/boot; a change takes effect at the next boot.\n"+
		"capture=%s\ngpus=%d\nnvswitches=%d\nnouveau=%s\nmodules=%s\n", Label, name, len(gpus), hw.NVSwitches, yes[hw.Nouveau],
		map[bool]string{true: "runtime", false: "boot"}[hw.RuntimeModules])
	for _, g := range gpus {
		addr := g.PCIAddress()
		dev := pciDevice{Vendor: 0x10de, Device: g.Device(), Class: g.Class, Revision: 0xa1,
			SubVendor: uint16(g.SubsystemID), SubDevice: uint16(g.SubsystemID >> 16)}
		dev.add(out, addr, "GPU "+g.Name+" of capture "+name)
		out["/usr/share/gpusim/gpus/"+addr+"/information"] = fmt.Appendf(nil,
			"Model: \t\t %s\nIRQ:   \t\t 0\nGPU UUID: \t %s\nVideo BIOS: \t ??.??.??.??.??\nBus Type: \t PCIe\n"+
				"DMA Size: \t 52 bits\nDMA Mask: \t 0xfffffffffffff\nBus Location: \t %s\nDevice Minor: \t %d\nGPU Excluded:\t No\n"+
				"# %s: simulated\n", g.Name, g.UUID, addr, g.Index, Label)
	}
	switchID := uint16(0x22a3) // GH100 NVSwitch (HGX H100/H200)
	if len(gpus) > 0 && gpus[0].Device() < 0x2300 {
		switchID = 0x1af1 // GA100 NVSwitch (HGX A100)
	}
	for i := range hw.NVSwitches {
		dev := pciDevice{Vendor: 0x10de, Device: switchID, Class: 0x068000, Revision: 0xa1, SubVendor: 0x10de, SubDevice: 0x1796}
		dev.add(out, fmt.Sprintf("0000:%02x:00.0", 0xe0+i), "NVSwitch "+fmt.Sprint(i))
	}
	out["/usr/lib/gpusim/boot"] = bootScript
	out["/etc/systemd/system/gpusim-boot.service"] = []byte(bootUnit)
	out["/usr/lib/modprobe.d/gpusim.conf"] = []byte(noModule)
	if hw.RuntimeModules {
		out["/usr/lib/modprobe.d/gpusim.conf"] = []byte(runtimeModules)
	}
	return tarGz(out)
}

// pciDevice is one simulated PCI function as sysfs shows it.
type pciDevice struct {
	Vendor, Device, SubVendor, SubDevice uint16
	Class                                uint32
	Revision                             uint8
}

func (d pciDevice) add(out map[string][]byte, addr, what string) {
	dir := "/usr/share/gpusim/pci/" + addr + "/"
	out[dir+"vendor"] = fmt.Appendf(nil, "0x%04x\n", d.Vendor)
	out[dir+"device"] = fmt.Appendf(nil, "0x%04x\n", d.Device)
	out[dir+"class"] = fmt.Appendf(nil, "0x%06x\n", d.Class)
	out[dir+"subsystem_vendor"] = fmt.Appendf(nil, "0x%04x\n", d.SubVendor)
	out[dir+"subsystem_device"] = fmt.Appendf(nil, "0x%04x\n", d.SubDevice)
	out[dir+"revision"] = fmt.Appendf(nil, "0x%02x\n", d.Revision)
	out[dir+"numa_node"] = []byte("-1\n")
	out[dir+"enable"] = []byte("1\n")
	out[dir+"gpusim"] = fmt.Appendf(nil, "%s (test only): simulated %s\n", Label, what)
	// the standard configuration header, which lspci reads
	cfg := make([]byte, 64)
	binary.LittleEndian.PutUint16(cfg[0x00:], d.Vendor)
	binary.LittleEndian.PutUint16(cfg[0x02:], d.Device)
	binary.LittleEndian.PutUint16(cfg[0x04:], 0x0006) // memory space, bus master
	cfg[0x08] = d.Revision
	cfg[0x09] = uint8(d.Class)
	cfg[0x0a] = uint8(d.Class >> 8)
	cfg[0x0b] = uint8(d.Class >> 16)
	binary.LittleEndian.PutUint16(cfg[0x2c:], d.SubVendor)
	binary.LittleEndian.PutUint16(cfg[0x2e:], d.SubDevice)
	out[dir+"config"] = cfg
}

func tarGz(files map[string][]byte) ([]byte, error) {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	now := time.Now()
	for _, n := range names { // tar makes the parent directories (0755 under root's umask)
		rel := strings.TrimPrefix(n, "/")
		mode := int64(0o644)
		if n == "/usr/lib/gpusim/boot" {
			mode = 0o755
		}
		if err := tw.WriteHeader(&tar.Header{Name: rel, Mode: mode, Size: int64(len(files[n])), ModTime: now, Typeflag: tar.TypeReg}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(files[n]); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
