// Package facts is what gpukit learns about a host by probing it: OS, kernel,
// hardware, GPUs, runtimes. One probe script (pkg/scripts probe.sh) gathers
// everything in a single round trip; Parse turns its output into Facts.
package facts

import (
	"bufio"
	"bytes"
	"fmt"
	"net/netip"
	"sort"
	"strconv"
	"strings"

	"github.com/gpukit/gpukit/pkg/osfamily"
)

// Facts about one host. Zero values mean "not found" (e.g. no nvidia-smi).
type Facts struct {
	OS     OS     `json:"os"`
	Kernel string `json:"kernel"`
	// KernelHeaders: the running kernel's headers are installed
	// (/lib/modules/KERNEL/build).
	KernelHeaders bool   `json:"kernelHeaders,omitempty"`
	Arch          string `json:"arch"`
	Hostname      string `json:"hostname"`
	CPUs          int    `json:"cpus"`
	MemKiB        int64  `json:"memKiB"`
	SwapKiB       int64  `json:"swapKiB"`
	RootFree      int64  `json:"rootFreeKiB"`
	Disks         []Disk `json:"disks,omitempty"`
	// ProductUUID is empty where the firmware exposes none (VMs, containers).
	ProductUUID string `json:"productUUID,omitempty"`
	MachineID   string `json:"machineID,omitempty"`
	// PCIGPUs are NVIDIA display/3D controllers on the PCI bus, driver or not.
	PCIGPUs []PCIDevice `json:"pciGPUs,omitempty"`
	// NvidiaSMI is true when the nvidia-smi command exists.
	NvidiaSMI bool `json:"nvidiaSMI"`
	// NvidiaSMIError is what nvidia-smi said when it failed, e.g. a
	// "Driver/library version mismatch".
	NvidiaSMIError string `json:"nvidiaSMIError,omitempty"`
	GPUs           []GPU  `json:"gpus,omitempty"`
	// MIG are the GPU-instance profiles of the GPUs whose MIG mode is on
	// (nvidia-smi mig -lgip).
	MIG []MIGProfile `json:"mig,omitempty"`
	// LoadedDriver is the version of the nvidia kernel module in memory.
	LoadedDriver  string `json:"loadedDriver,omitempty"`
	NouveauLoaded bool   `json:"nouveauLoaded"`
	// Addresses are the host's global IP addresses, by interface.
	Addresses []IfAddr `json:"addresses,omitempty"`
	// GPUKitProxy: gpukit's proxy settings are on the host (its
	// /etc/gpukit/proxy.env, written first and removed last).
	GPUKitProxy bool     `json:"gpukitProxy,omitempty"`
	SecureBoot  string   `json:"secureBoot"`
	Runtimes    []string `json:"runtimes,omitempty"`
	// Swarm is the node's Docker Swarm state (inactive, active, ...); empty
	// without docker.
	Swarm string `json:"swarm,omitempty"`
	// KubeletServer is the API a kubeadm node's kubelet talks to (from
	// /etc/kubernetes/kubelet.conf); empty on a host that is not one.
	KubeletServer string `json:"kubeletServer,omitempty"`
	Init          string `json:"init"`
	// TimeSynced is "yes", "no" or "" (unknown: no systemd-timedated).
	TimeSynced      string `json:"timeSynced,omitempty"`
	TimeSyncService string `json:"timeSyncService,omitempty"`
	ListeningTCP    []int  `json:"listeningTCP,omitempty"`
}

// OS is the /etc/os-release identity.
type OS struct {
	ID      string `json:"id"`
	Version string `json:"version"`
	Like    string `json:"like,omitempty"`
	Pretty  string `json:"pretty,omitempty"`
}

// Family is the supported OS family this is, or an *osfamily.UnsupportedError.
func (o OS) Family() (osfamily.Info, error) { return osfamily.Detect(o.ID, o.Version) }

// Disk is a whole block device.
type Disk struct {
	Name  string `json:"name"`
	Bytes int64  `json:"bytes"`
}

// PCIDevice is an NVIDIA device found on the PCI bus.
type PCIDevice struct {
	Address  string `json:"address"`
	DeviceID string `json:"deviceID"`
}

// GPU is one row of nvidia-smi --query-gpu.
type GPU struct {
	Index   int    `json:"index"`
	UUID    string `json:"uuid"`
	Name    string `json:"name"`
	MemMiB  int64  `json:"memMiB"`
	Driver  string `json:"driver"`
	MIGMode string `json:"migMode,omitempty"`
	// Persistence is persistence mode, "Enabled" or "Disabled".
	Persistence string `json:"persistence,omitempty"`
	// BusID is its PCI address as nvidia-smi writes it (00000000:81:00.0).
	BusID string `json:"busID,omitempty"`
	// MIGPending is the MIG mode the GPU takes at its next reset ("" where
	// the GPU has none).
	MIGPending string `json:"migPending,omitempty"`
	// MIGDevices are the GPU's MIG devices (nvidia-smi -L).
	MIGDevices []MIGDevice `json:"migDevices,omitempty"`
}

// SecureBootEnabled reports whether the probe saw Secure Boot switched on.
func (f *Facts) SecureBootEnabled() bool {
	s := strings.ToLower(f.SecureBoot)
	return strings.Contains(s, "secureboot enabled") || s == "efivar 1"
}

// IfAddr is one of a host's IP addresses and its interface.
type IfAddr struct {
	Interface string `json:"interface"`
	Address   string `json:"address"`
}

// Interface is the interface that holds address ip ("" when none does).
func (f *Facts) Interface(ip string) string {
	want, err := netip.ParseAddr(ip)
	if err != nil {
		return ""
	}
	for _, a := range f.Addresses {
		if have, err := netip.ParseAddr(a.Address); err == nil && have.Unmap() == want.Unmap() {
			return a.Interface
		}
	}
	return ""
}

// PCIAddress is a PCI address in one form, whoever wrote it: lower case,
// the domain without its leading zeros (nvidia-smi's 00000000:81:00.0 and
// sysfs's 0000:81:00.0 are both 0:81:00.0).
func PCIAddress(s string) string {
	s = strings.ToLower(s)
	if parts := strings.Split(s, ":"); len(parts) == 3 { // domain:bus:device[.function]
		parts[0] = strings.TrimLeft(parts[0], "0")
		return strings.Join(parts, ":")
	}
	return s
}

// SamePCIAddress compares nvidia-smi's bus id with sysfs's.
func SamePCIAddress(smi, sysfs string) bool {
	return smi != "" && sysfs != "" && PCIAddress(smi) == PCIAddress(sysfs)
}

// Unlisted are the GPUs on the PCI bus that nvidia-smi does not list (a GPU
// fallen off the bus, one the driver refused): by bus id where nvidia-smi
// gave them, else the surplus of the count.
func (f *Facts) Unlisted() []PCIDevice {
	var out []PCIDevice
	byID := false
	for _, g := range f.GPUs {
		byID = byID || g.BusID != ""
	}
	if !byID {
		if len(f.PCIGPUs) > len(f.GPUs) {
			return f.PCIGPUs[len(f.GPUs):]
		}
		return nil
	}
	for _, d := range f.PCIGPUs {
		listed := false
		for _, g := range f.GPUs {
			listed = listed || SamePCIAddress(g.BusID, d.Address)
		}
		if !listed {
			out = append(out, d)
		}
	}
	return out
}

// Listening reports whether something listens on TCP port p.
func (f *Facts) Listening(p int) bool {
	i := sort.SearchInts(f.ListeningTCP, p)
	return i < len(f.ListeningTCP) && f.ListeningTCP[i] == p
}

// Parse reads the probe's key=value output. Unknown keys are ignored so a
// newer probe works with an older parser; malformed values are errors.
func Parse(out []byte) (*Facts, error) {
	f := &Facts{}
	ports := map[int]bool{}
	var list, lgip strings.Builder
	err := ScanKV(out, "probe output", func(key, value string) error {
		switch key {
		case "nvidia_smi.list": // nvidia-smi -L, a line at a time
			list.WriteString(value + "\n")
		case "nvidia_smi.lgip": // nvidia-smi mig -lgip, a line at a time
			lgip.WriteString(value + "\n")
		default:
			return f.set(key, value, ports)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := f.setMIG(list.String(), lgip.String()); err != nil {
		return nil, err
	}
	for p := range ports {
		f.ListeningTCP = append(f.ListeningTCP, p)
	}
	sort.Ints(f.ListeningTCP)
	return f, nil
}

// ScanKV reads the key=value lines a probe script prints (list facts repeat
// their key) and gives each to set; other lines (a login banner) are not
// facts and are skipped. what names the output in errors.
func ScanKV(out []byte, what string, set func(key, value string) error) error {
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		key, value, ok := strings.Cut(sc.Text(), "=")
		if !ok {
			continue
		}
		if err := set(key, value); err != nil {
			return fmt.Errorf("%s line %d (%s): %w", what, line, key, err)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading %s: %w", what, err)
	}
	return nil
}

func (f *Facts) set(key, value string, ports map[int]bool) error {
	var err error
	switch key {
	case "os.id":
		f.OS.ID = value
	case "os.version":
		f.OS.Version = value
	case "os.like":
		f.OS.Like = value
	case "os.pretty":
		f.OS.Pretty = value
	case "kernel":
		f.Kernel = value
	case "kernel.headers":
		f.KernelHeaders = value == "yes"
	case "arch":
		f.Arch = value
	case "hostname":
		f.Hostname = value
	case "cpus":
		f.CPUs, err = strconv.Atoi(value)
	case "mem.kib":
		f.MemKiB, err = strconv.ParseInt(value, 10, 64)
	case "swap.kib":
		f.SwapKiB, err = strconv.ParseInt(value, 10, 64)
	case "root.avail.kib":
		if value != "" {
			f.RootFree, err = strconv.ParseInt(value, 10, 64)
		}
	case "disk":
		var d Disk
		d, err = parseDisk(value)
		f.Disks = append(f.Disks, d)
	case "product_uuid":
		f.ProductUUID = strings.ToLower(value)
	case "machine_id":
		f.MachineID = value
	case "pci.gpu":
		addr, dev, _ := strings.Cut(value, " ")
		f.PCIGPUs = append(f.PCIGPUs, PCIDevice{Address: addr, DeviceID: dev})
	case "nvidia_smi.present":
		f.NvidiaSMI = value == "true"
	case "nvidia_smi.error":
		f.NvidiaSMIError = strings.TrimSpace(value)
	case "nvidia_smi.gpu":
		var g GPU
		g, err = ParseGPU(value)
		f.GPUs = append(f.GPUs, g)
	case "nvidia.loaded":
		f.LoadedDriver = value
	case "nouveau.loaded":
		f.NouveauLoaded = value == "true"
	case "gpukit.proxy":
		f.GPUKitProxy = value == "true"
	case "ip.addr":
		dev, addr, _ := strings.Cut(value, " ")
		f.Addresses = append(f.Addresses, IfAddr{Interface: dev, Address: addr})
	case "secureboot":
		f.SecureBoot = value
	case "runtime":
		f.Runtimes = append(f.Runtimes, value)
	case "swarm":
		f.Swarm = value
	case "kubelet.server":
		f.KubeletServer = value
	case "init":
		f.Init = value
	case "timesync":
		switch value {
		case "yes", "no":
			f.TimeSynced = value
		}
	case "timesync.service":
		f.TimeSyncService = value
	case "listen.tcp":
		var p int
		p, err = strconv.Atoi(value)
		ports[p] = true
	}
	return err
}

// setMIG attaches what nvidia-smi -L and -lgip said to the GPUs.
func (f *Facts) setMIG(list, lgip string) error {
	var err error
	f.MIG, err = AttachMIG(f.GPUs, list, lgip)
	return err
}

// AttachMIG gives gpus their MIG devices from list (nvidia-smi -L) and
// returns the profiles lgip (nvidia-smi mig -lgip) lists; either may be
// empty (not read).
func AttachMIG(gpus []GPU, list, lgip string) ([]MIGProfile, error) {
	if list != "" {
		devs, err := ParseMIGDevices(list)
		if err != nil {
			return nil, err
		}
		for i := range gpus {
			gpus[i].MIGDevices = devs[gpus[i].Index]
		}
	}
	if lgip == "" {
		return nil, nil
	}
	return ParseMIGProfiles(lgip)
}

func parseDisk(v string) (Disk, error) {
	name, size, _ := strings.Cut(v, " ")
	n, err := strconv.ParseInt(size, 10, 64)
	return Disk{Name: name, Bytes: n}, err
}

// GPUQueryFields returns the --query-gpu fields the probe asks nvidia-smi
// for, in the order ParseGPU reads them: the one list, which the probe
// template receives as a parameter.
func GPUQueryFields() []string {
	return []string{"index", "uuid", "name", "memory.total", "driver_version", "mig.mode.current", "persistence_mode", "pci.bus_id", "mig.mode.pending"}
}

// ParseGPU reads one line of
// nvidia-smi --query-gpu=<GPUQueryFields> --format=csv,noheader,nounits.
func ParseGPU(line string) (GPU, error) {
	fields := strings.Split(line, ",")
	if len(fields) < 5 {
		return GPU{}, fmt.Errorf("nvidia-smi row %q: want at least 5 comma-separated fields", line)
	}
	for i := range fields {
		fields[i] = strings.TrimSpace(fields[i])
	}
	idx, err := strconv.Atoi(fields[0])
	if err != nil {
		return GPU{}, fmt.Errorf("nvidia-smi row %q: index: %w", line, err)
	}
	g := GPU{Index: idx, UUID: fields[1], Name: fields[2], Driver: fields[4]}
	// memory.total is "[N/A]" on some virtual GPUs; that is not an error.
	if mem, err := strconv.ParseInt(strings.TrimSuffix(fields[3], " MiB"), 10, 64); err == nil {
		g.MemMiB = mem
	}
	if len(fields) > 5 && fields[5] != "[N/A]" {
		g.MIGMode = fields[5]
	}
	if len(fields) > 6 {
		g.Persistence = fields[6]
	}
	if len(fields) > 7 {
		g.BusID = fields[7]
	}
	if len(fields) > 8 && fields[8] != "[N/A]" {
		g.MIGPending = fields[8]
	}
	return g, nil
}
