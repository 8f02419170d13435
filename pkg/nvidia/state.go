package nvidia

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/gpukit/gpukit/pkg/facts"
)

// State is what of the NVIDIA stack is on a host, from the nvidia-state
// probe (pkg/scripts). Zero values mean "not there".
type State struct {
	Kernel string
	BootID string
	// Headers: the running kernel's headers are installed.
	Headers bool
	// ModuleInstalled is the version of the nvidia module on disk for the
	// running kernel (modinfo); ModuleLoaded the one in memory.
	ModuleInstalled, ModuleLoaded     string
	NouveauLoaded, NouveauBlacklisted bool
	// RebootRequired lists who asked for a reboot: "gpukit" (a marker on
	// /run, gone after a boot) or "system" (/var/run/reboot-required).
	RebootRequired []string
	// RebootWhy are the reasons gpukit's marker gives ("nouveau", "driver
	// 580.95.05 loaded, 590.48.01 installed").
	RebootWhy []string
	// Packages are the installed packages of the stack, by name.
	Packages map[string]Package
	// UnattendedBlacklist: unattended-upgrades is told to keep off.
	UnattendedBlacklist bool
	// Services maps nvidia-persistenced and nvidia-fabricmanager to their
	// state.
	Services           map[string]Service
	PersistencedDropIn bool
	// RuntimeNVIDIA lists the runtimes whose configuration names nvidia.
	RuntimeNVIDIA []string
	// NVSwitchPCI counts NVSwitch bridges on the PCI bus; NVSwitchDriver
	// those the driver sees (-1: the driver shows none).
	NVSwitchPCI, NVSwitchDriver int
	DGX                         bool
	// SMI are the GPUs nvidia-smi lists; SMIError what it said instead.
	SMI      []facts.GPU
	SMIError string
	// MIG are the GPU-instance profiles of the GPUs with MIG on.
	MIG []facts.MIGProfile
	// MIGScript is the sha256 of gpukit's MIG script on the host, MIGUnit
	// whether its boot unit is enabled ("" for neither).
	MIGScript, MIGUnit string

	list, lgip strings.Builder
}

// Package is one installed package.
type Package struct {
	Version string
	Held    bool
}

// Service is a systemd unit's state ("enabled", "active").
type Service struct {
	Enabled, Active string
}

// ParseState reads the nvidia-state probe's output. Unknown keys are
// ignored, so a newer probe works with an older parser.
func ParseState(out []byte) (*State, error) {
	s := &State{Packages: map[string]Package{}, Services: map[string]Service{}, NVSwitchDriver: -1}
	if err := facts.ScanKV(out, "nvidia state", s.set); err != nil {
		return nil, err
	}
	var err error
	if s.MIG, err = facts.AttachMIG(s.SMI, s.list.String(), s.lgip.String()); err != nil {
		return nil, err
	}
	sort.Strings(s.RebootRequired)
	return s, nil
}

func (s *State) set(key, value string) error {
	var err error
	f := strings.Fields(value)
	switch key {
	case "kernel":
		s.Kernel = value
	case "boot_id":
		s.BootID = value
	case "headers":
		s.Headers = value == "yes"
	case "module.installed":
		s.ModuleInstalled = value
	case "module.loaded":
		s.ModuleLoaded = value
	case "nouveau.loaded":
		s.NouveauLoaded = value == "yes"
	case "nouveau.blacklisted":
		s.NouveauBlacklisted = value == "yes"
	case "reboot.required":
		s.RebootRequired = append(s.RebootRequired, value)
	case "reboot.why":
		s.RebootWhy = append(s.RebootWhy, value)
	case "pkg":
		if len(f) != 3 {
			return fmt.Errorf("want name, version and hold, got %q", value)
		}
		s.Packages[f[0]] = Package{Version: f[1], Held: f[2] == "yes"}
	case "unattended.blacklist":
		s.UnattendedBlacklist = value == "yes"
	case "service":
		if len(f) < 1 {
			return fmt.Errorf("no service name")
		}
		sv := Service{}
		if len(f) > 1 {
			sv.Enabled = f[1]
		}
		if len(f) > 2 {
			sv.Active = f[2]
		}
		s.Services[f[0]] = sv
	case "persistenced.dropin":
		s.PersistencedDropIn = value == "yes"
	case "runtime.nvidia":
		s.RuntimeNVIDIA = append(s.RuntimeNVIDIA, value)
	case "nvswitch.pci":
		s.NVSwitchPCI, err = strconv.Atoi(value)
	case "nvswitch.driver":
		s.NVSwitchDriver, err = strconv.Atoi(strings.TrimSpace(value))
	case "dgx":
		s.DGX = value == "yes"
	case "smi.gpu":
		var g facts.GPU
		g, err = facts.ParseGPU(value)
		s.SMI = append(s.SMI, g)
	case "smi.error":
		s.SMIError = strings.TrimSpace(value)
	case "smi.list":
		s.list.WriteString(value + "\n")
	case "smi.lgip":
		s.lgip.WriteString(value + "\n")
	case "mig.script":
		s.MIGScript = value
	case "mig.unit":
		s.MIGUnit = value
	}
	return err
}

// driverPackages are the packages whose version is the driver's, most
// telling first: the meta packages gpukit installs, then what they pull in.
var driverPackages = regexp.MustCompile(`^(nvidia-open|cuda-drivers|nvidia-driver|nvidia-driver-[0-9]+(-server)?(-open)?|nvidia-headless-[0-9]+(-server)?(-open)?|nvidia-kernel-dkms|nvidia-open-kernel-dkms|nvidia-driver-libs|libnvidia-compute-[0-9]+|nvidia-kernel-common-[0-9]+)$`)

// InstalledDriver is the driver release on disk: the module's version when
// modinfo can read it, else the version of the driver's packages ("" for
// none).
func (s *State) InstalledDriver() string {
	if s.ModuleInstalled != "" {
		return s.ModuleInstalled
	}
	var names []string
	for n := range s.Packages {
		if driverPackages.MatchString(n) {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		if v := Upstream(s.Packages[n].Version); v != "" {
			return v
		}
	}
	return ""
}

// Upstream is the upstream part of a package version, without the epoch
// and the packaging revision (after the last hyphen, Debian's rule):
// "1:580.95.05-1ubuntu1" is 580.95.05.
func Upstream(v string) string {
	if i := strings.IndexByte(v, ':'); i >= 0 {
		v = v[i+1:]
	}
	if i := strings.LastIndexByte(v, '-'); i >= 0 {
		v = v[:i]
	}
	return v
}

// versionMatches accepts an exact release or a branch ("580" matches
// 580.95.05).
func versionMatches(have, want string) bool {
	return have != "" && (have == want || strings.HasPrefix(have, want+"."))
}

// SwapBlocker says why only a reboot can bring the installed driver into
// memory, or "" when unloading the old modules and loading the new ones may
// (the modules' users decide on the host). nouveau lets go of the GPUs only
// at a boot, and a reboot the OS or gpukit asks for other than the driver's
// is not avoided by a swap.
func (s *State) SwapBlocker() string {
	switch {
	case s.NouveauLoaded:
		return "nouveau is loaded"
	case slices.Contains(s.RebootRequired, "system"):
		return "the OS asks for a reboot (/var/run/reboot-required)"
	}
	for _, why := range s.RebootWhy {
		if !strings.HasPrefix(why, "driver ") {
			return "a reboot is required (" + why + ")"
		}
	}
	return ""
}

// NeedsReboot says why the host needs a reboot for its driver, or "" when it
// does not: nouveau still loaded, a module in memory other than the one on
// disk, or a reboot-required marker.
func (s *State) NeedsReboot() string {
	installed := s.InstalledDriver()
	switch {
	case s.NouveauLoaded && installed != "":
		return "nouveau is loaded"
	case s.ModuleLoaded != "" && installed != "" && s.ModuleLoaded != installed:
		return fmt.Sprintf("driver %s is loaded, %s is installed", s.ModuleLoaded, installed)
	case strings.Contains(s.SMIError, "version mismatch"):
		return "nvidia-smi: " + s.SMIError
	case len(s.RebootRequired) > 0:
		return "a reboot is required (" + strings.Join(s.RebootRequired, ", ") + ")"
	}
	return ""
}
