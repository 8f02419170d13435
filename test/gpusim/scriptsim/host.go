package scriptsim

import (
	"cmp"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/gpukit/gpukit/test/fixtures"
	"github.com/gpukit/gpukit/test/gpusim/capture"
)

// Host is one simulated host: the machine, what is installed and loaded,
// and the failures it is set up with. Tests read it (Sim.Host) and change it
// (Sim.Update) between runs.
type Host struct {
	// GPUs is how many NVIDIA GPUs the PCI bus has (0: a CPU-only host).
	GPUs int
	// Capture is the real recording the GPUs replay: a name in
	// test/testdata/nvidia-smi, or a path prefix (with a /) of any capture:
	// --query-gpu and -q recordings, or a -q -x or -q report alone (the
	// rows are derived from it); "" is DefaultCapture.
	Capture string
	// UUIDs replace the GPUs' UUIDs, in order (a test's own names).
	UUIDs []string
	// Device replaces every GPU's PCI device id, for a GPU no capture
	// has ("0x1db4": a Tesla V100); the driver decides by it (and the
	// name) whether it drives the GPU.
	Device     string
	SecureBoot bool

	// Boot counts the boots; Rebooting the dials left until the host is
	// back from a reboot (each refused but the last).
	Boot, Rebooting int
	// Headers: the running kernel's headers are installed.
	Headers                           bool
	NouveauLoaded, NouveauBlacklisted bool
	// Packages are the installed packages (name -> version), Held those
	// apt-mark holds.
	Packages map[string]string
	Held     map[string]bool
	// Driver is the driver release installed (the module on disk), Loaded
	// the one in memory ("": none).
	Driver, Loaded string
	// RebootRequired is gpukit's reboot marker (/run/gpukit), RebootWhy
	// its lines.
	RebootRequired      bool
	RebootWhy           []string
	UnattendedBlacklist bool
	// The persistence daemon: gpukit's drop-in (persistence mode on), its
	// unit enabled, running.
	PersistencedDropIn, PersistencedEnabled, PersistencedActive bool

	// InstallFails, while set, fails the driver's install with it on
	// stderr (exit 100, as apt when a package's script fails).
	InstallFails string
	// RebootDials is how many dials a reboot refuses (0: one).
	RebootDials int
	// ECCErrors are volatile uncorrectable ECC errors of the first GPU.
	ECCErrors int
	// BreakAtBoot breaks the host at its next boot: from then on
	// (SMIBroken) nvidia-smi cannot talk to the driver.
	BreakAtBoot, SMIBroken bool
	// ComputeApps are processes computing on the GPUs, as nvidia-smi
	// --query-compute-apps prints them (CSV lines).
	ComputeApps string
	// RuntimeModules: the driver's modules can be unloaded and loaded
	// without a reboot (nothing else holds them); without it every driver
	// change in memory takes a boot.
	RuntimeModules bool

	// MIG is the GPUs' partitioning (SIMULATED, mig.go).
	MIG MIGState
	// DCGMDiag and NCCL are the acceptance tests' real outputs the host
	// replays (files in test/testdata/dcgm-diag and nccl-tests); "": the
	// host has no DCGM, no nccl-tests.
	DCGMDiag, NCCL string

	// Writes are the write scripts run on the host, by name, in order.
	Writes []string
}

// DefaultCapture is the GPU of a host that names none: an H100 SXM5.
const DefaultCapture = "h100-80gb-hbm3__drv590.48.01"

// ContainerToolkit are the NVIDIA container toolkit's packages.
var ContainerToolkit = []string{"nvidia-container-toolkit", "nvidia-container-toolkit-base", "libnvidia-container-tools", "libnvidia-container1"}

// Fresh is a GPU host as gpukit init first meets it: gpus GPUs, nouveau
// driving them, nothing of NVIDIA's installed.
func Fresh(gpus int) Host {
	return Host{GPUs: gpus, Boot: 1, NouveauLoaded: true, Packages: map[string]string{}, Held: map[string]bool{}}
}

// Installed is a GPU host as gpukit init leaves it: driver installed,
// held and loaded, persistence mode on, container toolkit 1.20.0.
func Installed(driver string, gpus int) Host {
	h := Fresh(gpus)
	h.NouveauLoaded, h.NouveauBlacklisted, h.Headers, h.UnattendedBlacklist = false, true, true, true
	h.Packages["dkms"] = "3.0.10-8"
	h.install(driver+"-1", "nvidia-open", "nvidia-persistenced")
	h.install("1.20.0-1", ContainerToolkit...)
	h.Driver, h.Loaded = driver, driver
	h.PersistencedDropIn, h.PersistencedEnabled, h.PersistencedActive = true, true, true
	return h
}

// CPU is a host without GPUs.
func CPU() Host { return Fresh(0) }

func (h *Host) bootID() string { return fmt.Sprintf("boot-%d", h.Boot) }

// probe is probe.sh's output (pkg/facts parses it).
func (h *Host) probe(name, script string) (string, int, string) {
	var b strings.Builder
	kv := func(k, v string) { fmt.Fprintf(&b, "%s=%s\n", k, v) }
	kv("os.id", "debian")
	kv("os.version", "12")
	kv("os.pretty", "Debian GNU/Linux 12 (bookworm)")
	kv("kernel", kernel)
	if h.Headers {
		kv("kernel.headers", "yes")
	} else {
		kv("kernel.headers", "no")
	}
	kv("arch", "x86_64")
	kv("hostname", name)
	kv("cpus", "64")
	kv("mem.kib", "528000000")
	kv("root.avail.kib", "400000000")
	kv("machine_id", "id-"+name)
	set, err := h.gpuSet()
	if err != nil {
		return "", 1, err.Error()
	}
	for _, g := range set.gpus { // the PCI bus shows every GPU, driven or not
		kv("pci.gpu", fmt.Sprintf("%s 0x%04x", g.PCIAddress(), g.Device()))
	}
	if h.smiInstalled() {
		kv("nvidia_smi.present", "true")
		h.smiRows(script, "nvidia_smi.gpu", "nvidia_smi.error", kv)
	}
	if h.Loaded != "" {
		kv("nvidia.loaded", h.Loaded)
	}
	if h.NouveauLoaded {
		kv("nouveau.loaded", "true")
	}
	kv("secureboot", map[bool]string{true: "SecureBoot enabled", false: "SecureBoot disabled"}[h.SecureBoot])
	kv("init", "systemd")
	kv("timesync", "yes")
	kv("timesync.service", "chrony")
	kv("listen.tcp", "22")
	return b.String(), 0, ""
}

const kernel = "6.1.0-26-amd64"

// statePackages are the packages nvidia-state.sh lists.
var statePackages = []string{"nvidia-*", "libnvidia-*", "cuda-*", "libcuda*", "firmware-nvidia-*", "xserver-xorg-video-nvidia*", "dkms"}

// nvidiaState is nvidia-state.sh's output (pkg/nvidia parses it).
func (h *Host) nvidiaState(script string) (string, int, string) {
	var b strings.Builder
	kv := func(k, v string) { fmt.Fprintf(&b, "%s=%s\n", k, v) }
	yes := func(k string, on bool) {
		if on {
			kv(k, "yes")
		}
	}
	kv("kernel", kernel)
	kv("boot_id", h.bootID())
	yes("headers", h.Headers)
	kv("module.installed", h.Driver)
	if h.Loaded != "" {
		kv("module.loaded", h.Loaded)
	}
	yes("nouveau.loaded", h.NouveauLoaded)
	yes("nouveau.blacklisted", h.NouveauBlacklisted)
	if h.RebootRequired {
		kv("reboot.required", "gpukit")
		for _, why := range h.RebootWhy {
			kv("reboot.why", why)
		}
	}
	names := make([]string, 0, len(h.Packages))
	for n := range h.Packages {
		if slices.ContainsFunc(statePackages, func(p string) bool { ok, _ := path.Match(p, n); return ok }) {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	for _, n := range names {
		kv("pkg", fmt.Sprintf("%s %s %s", n, h.Packages[n], map[bool]string{true: "yes", false: "no"}[h.Held[n]]))
	}
	yes("unattended.blacklist", h.UnattendedBlacklist)
	yes("persistenced.dropin", h.PersistencedDropIn)
	if _, ok := h.Packages["nvidia-persistenced"]; ok {
		kv("service", "nvidia-persistenced "+map[bool]string{true: "enabled", false: "disabled"}[h.PersistencedEnabled]+" "+
			map[bool]string{true: "active", false: "inactive"}[h.PersistencedActive])
	}
	kv("nvswitch.pci", "0")
	if h.smiInstalled() {
		h.smiRows(script, "smi.gpu", "smi.error", kv)
		if fail, _ := h.smi(); fail == "" {
			if err := h.migState(kv); err != nil {
				return "", 2, err.Error()
			}
		}
	}
	return b.String(), 0, ""
}

// smiRows prints nvidia-smi --query-gpu's rows (the fields the script asks
// for), or what it said instead.
func (h *Host) smiRows(script, rowKey, errKey string, kv func(k, v string)) {
	var rows []string
	fail, _ := h.smi()
	if fail == "" {
		fields := scriptQueryGPU.FindStringSubmatch(script)
		if fields == nil {
			fail = "scriptsim: no --query-gpu in the script"
		} else if out, err := h.queryGPU(strings.Split(fields[1], ",")); err != nil {
			fail = err.Error()
		} else {
			rows = out
			h.migRows(strings.Split(fields[1], ","), rows)
		}
	}
	if fail != "" {
		kv(errKey, strings.ReplaceAll(fail, "\n", " "))
		return
	}
	for _, r := range rows {
		kv(rowKey, r)
	}
}

func (h *Host) smiInstalled() bool { return h.Driver != "" }

// smi says what nvidia-smi says instead of answering, and its exit code;
// "" when it answers.
func (h *Host) smi() (string, int) {
	switch {
	case h.SMIBroken || h.Loaded == "":
		return "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running.", 9
	case h.Loaded != h.Driver:
		v := strings.Split(h.Driver, ".")
		return "Failed to initialize NVML: Driver/library version mismatch\nNVML library version: " + strings.Join(v[:min(2, len(v))], "."), 18
	}
	if set, err := h.gpuSet(); err == nil && len(set.gpus) > 0 && len(set.ignored) == len(set.gpus) {
		// A module in memory that drives none of the GPUs: a real one
		// does not load then (see settle), unless a test changed the
		// GPUs under a loaded one.
		return "No devices were found", 6
	}
	return "", 0
}

// drives says whether the kernel module of release finds a GPU of the
// host to drive; without one it does not load (capture.Driven).
func (h *Host) drives(release string) bool {
	set, err := h.gpuSet()
	if err != nil || len(set.gpus) == 0 {
		return true
	}
	driven, _, _ := capture.Driven(set.gpus, release)
	return len(driven) > 0
}

// settle makes a host as its last boot left it: a module that drives none
// of its GPUs (Installed with a GPU the driver's branch dropped) did not
// load, nor did the persistence daemon start.
func (h *Host) settle() {
	if h.Loaded != "" && !h.drives(h.Loaded) {
		h.Loaded, h.PersistencedActive = "", false
	}
}

// KernelLog is what the driver's kernel module logs (dmesg) as it loads on
// the host: each GPU it ignores (a generation its branch dropped, as NVIDIA's
// legacy message says, or one newer than it) and, when it drives none, that
// it found none; "" without a driver or with nothing to say.
func (h Host) KernelLog() (string, error) {
	if h.Driver == "" {
		return "", nil
	}
	set, err := h.gpuSet()
	if err != nil {
		return "", err
	}
	_, _, nvrm := capture.Driven(set.gpus, h.Driver)
	return nvrm, nil
}

// live is the replays' view of the host.
func (h *Host) live() capture.Live {
	l := capture.Live{Driver: h.Loaded, Persistence: "Disabled"}
	if h.PersistencedActive && h.PersistencedDropIn {
		l.Persistence = "Enabled"
	}
	return l
}

// queryGPU is nvidia-smi --query-gpu=fields --format=csv,noheader,nounits.
func (h *Host) queryGPU(fields []string) ([]string, error) {
	set, err := h.gpuSet()
	if err != nil {
		return nil, err
	}
	out, err := set.c.ReplayQueryGPU(fields, "csv,noheader,nounits", h.live())
	if err != nil {
		return nil, err
	}
	recorded := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	listed, at := set.listed()
	rows := make([]string, len(listed))
	for i, g := range listed {
		rec := recorded[at[i]%len(recorded)]
		vals := strings.Split(rec, ", ")
		if len(vals) != len(fields) {
			return nil, fmt.Errorf("scriptsim: capture %s: a row with a comma in a value: %q", set.c.Prefix, rec)
		}
		for j, f := range fields {
			switch f {
			case "index":
				vals[j] = strconv.Itoa(g.Index)
			case "uuid":
				vals[j] = g.UUID
			case "pci.bus_id":
				vals[j] = g.BusID
			}
		}
		rows[i] = strings.Join(vals, ", ")
	}
	return rows, nil
}

var (
	qAttached = regexp.MustCompile(`(?m)^(Attached GPUs\s*:\s*)[0-9]+`)
	qDRAM     = regexp.MustCompile(`(?m)^(\s*DRAM Uncorrectable\s*:\s*)[0-9]+`)
	xAttached = regexp.MustCompile(`(<attached_gpus>)[0-9]+`)
	xDRAM     = regexp.MustCompile(`(<dram_uncorrectable>)[0-9]+`)
)

// health is nvidia-health.sh: nvidia-smi -q -x where the capture has that
// report, else -q (the script falls back to it): the capture's report, one
// GPU section a GPU nvidia-smi lists, the first with ECCErrors.
func (h *Host) health() (string, int, string) {
	if !h.smiInstalled() {
		return "", 127, "nvidia-smi: command not found"
	}
	if fail, code := h.smi(); fail != "" {
		return fail + "\n", code, ""
	}
	set, err := h.gpuSet()
	if err != nil {
		return "", 1, err.Error()
	}
	kind := capture.KindQueryXML
	raw, err := set.c.Replay(kind, h.live())
	if err != nil {
		kind = capture.KindQuery
		if raw, err = set.c.Replay(kind, h.live()); err != nil {
			return "", 1, err.Error()
		}
	}
	attached, dram := qAttached, qDRAM
	if kind == capture.KindQueryXML {
		attached, dram = xAttached, xDRAM
	}
	recorded, c := set.recorded, set.c
	head, secs, tail := capture.Split(string(raw), kind == capture.KindQueryXML)
	if len(secs) == 0 || len(secs) != len(recorded) {
		return "", 1, fmt.Sprintf("scriptsim: capture %s: %d GPU sections in its report, %d GPUs", c.Prefix, len(secs), len(recorded))
	}
	listed, at := set.listed()
	var b strings.Builder
	b.WriteString(attached.ReplaceAllString(head, "${1}"+strconv.Itoa(len(listed))))
	for i, g := range listed {
		r := at[i] % len(recorded)
		sec := strings.NewReplacer(recorded[r].BusID, g.BusID, recorded[r].UUID, g.UUID).Replace(secs[r])
		if i == 0 && h.ECCErrors > 0 {
			// volatile and aggregate: the lifetime count has them too
			if len(dram.FindAllString(sec, 2)) < 2 {
				return "", 1, fmt.Sprintf("scriptsim: capture %s reports no DRAM ECC errors", c.Prefix)
			}
			sec = dram.ReplaceAllString(sec, "${1}"+strconv.Itoa(h.ECCErrors))
		}
		b.WriteString(sec)
	}
	b.WriteString(tail)
	return b.String(), 0, ""
}

var fixturesDir = sync.OnceValues(func() (string, error) {
	dir, why := fixtures.Find("nvidia-smi")
	if dir == "" {
		return "", fmt.Errorf("scriptsim: the nvidia-smi captures: %s", why)
	}
	return dir, nil
})

func (h *Host) capture() (capture.Capture, error) {
	name := cmp.Or(h.Capture, DefaultCapture)
	if strings.Contains(name, "/") {
		return capture.Capture{Prefix: name}, nil
	}
	dir, err := fixturesDir()
	return capture.Capture{Prefix: dir + "/" + name}, err
}

// gpuSet is a host's GPUs (gpus) and the capture they replay (c, whose
// GPUs are recorded).
type gpuSet struct {
	c              capture.Capture
	recorded, gpus []capture.GPU
	// ignored are the bus ids of the GPUs the loaded driver does not
	// drive (capture.Driven): nvidia-smi does not list them.
	ignored map[string]bool
}

// listed are the GPUs nvidia-smi lists, numbered from 0 as it numbers
// them, with the place of each among the host's GPUs.
func (s gpuSet) listed() (gpus []capture.GPU, at []int) {
	for i, g := range s.gpus {
		if !s.ignored[g.BusID] {
			g.Index = len(gpus)
			gpus, at = append(gpus, g), append(at, i)
		}
	}
	return gpus, at
}

// gpuSet is the host's GPUs: the capture's, then copies of them, each
// with its own index, bus (the recorded one's, plus its number) and UUID.
func (h *Host) gpuSet() (gpuSet, error) {
	if h.GPUs == 0 {
		return gpuSet{}, nil
	}
	c, err := h.capture()
	if err != nil {
		return gpuSet{}, err
	}
	recorded, err := c.GPUs()
	if err != nil {
		return gpuSet{}, err
	}
	var device uint64
	if h.Device != "" {
		if device, err = strconv.ParseUint(strings.TrimPrefix(strings.ToLower(h.Device), "0x"), 16, 16); err != nil {
			return gpuSet{}, fmt.Errorf("scriptsim: device %q: %w", h.Device, err)
		}
	}
	out := make([]capture.GPU, h.GPUs)
	for i := range out {
		g := recorded[i%len(recorded)]
		if i >= len(recorded) {
			g.Index = i
			parts := strings.Split(g.BusID, ":") // domain:bus:device.function
			bus, err := strconv.ParseUint(parts[1], 16, 8)
			if len(parts) != 3 || err != nil {
				return gpuSet{}, fmt.Errorf("scriptsim: capture %s: bus id %q", c.Prefix, g.BusID)
			}
			g.BusID = fmt.Sprintf("%s:%02X:%s", parts[0], int(bus)+i, parts[2])
			if len(g.UUID) > 12 {
				g.UUID = g.UUID[:len(g.UUID)-12] + fmt.Sprintf("%012x", i)
			}
		}
		if i < len(h.UUIDs) {
			g.UUID = h.UUIDs[i]
		}
		if device != 0 {
			g.DeviceID = uint32(device)<<16 | 0x10de
		}
		out[i] = g
	}
	set := gpuSet{c: c, recorded: recorded, gpus: out, ignored: map[string]bool{}}
	if h.Loaded != "" {
		_, ignored, _ := capture.Driven(out, h.Loaded)
		for _, g := range ignored {
			set.ignored[g.BusID] = true
		}
	}
	return set, nil
}
