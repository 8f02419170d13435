package facts

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// MIGProfile is one GPU-instance profile a GPU offers, a row of
// `nvidia-smi mig -lgip`. nvidia-smi lists profiles only for GPUs whose MIG
// mode is on; Free counts the instances that can still be created beside
// those that exist.
type MIGProfile struct {
	GPU   int    `json:"gpu"`
	Name  string `json:"name"` // 1g.10gb, 1g.10gb+me
	ID    int    `json:"id"`
	Free  int    `json:"free"`
	Total int    `json:"total"`
	// MemGiB is the instance's memory as nvidia-smi rounds it (9.75).
	MemGiB float64 `json:"memGiB"`
	SMs    int     `json:"sms"`
}

// The first line of a profile's two: GPU, "MIG name", ID, Free/Total,
// memory, P2P, SM, DEC, ENC. The column widths differ between drivers
// (R450-R560 print 79 columns, R570 on 81), so fields are read by order.
var lgipRow = regexp.MustCompile(`^\|\s*(\d+)\s+MIG\s+(\S+)\s+(\d+)\s+(\d+)/(\d+)\s+([0-9.]+)\s+\S+\s+(\d+)\s+\d+\s+\d+\s*\|$`)

// ParseMIGProfiles reads `nvidia-smi mig -lgip`. No row at all is an error
// unless nvidia-smi said that no GPU has MIG on.
func ParseMIGProfiles(out string) ([]MIGProfile, error) {
	var ps []MIGProfile
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimRight(line, " \r")
		m := lgipRow.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		p := MIGProfile{Name: m[2]}
		var err error
		for _, f := range []struct {
			dst *int
			s   string
		}{{&p.GPU, m[1]}, {&p.ID, m[3]}, {&p.Free, m[4]}, {&p.Total, m[5]}, {&p.SMs, m[7]}} {
			if *f.dst, err = strconv.Atoi(f.s); err != nil {
				return nil, fmt.Errorf("nvidia-smi mig -lgip row %q: %w", line, err)
			}
		}
		if p.MemGiB, err = strconv.ParseFloat(m[6], 64); err != nil {
			return nil, fmt.Errorf("nvidia-smi mig -lgip row %q: memory: %w", line, err)
		}
		ps = append(ps, p)
	}
	if len(ps) == 0 && strings.TrimSpace(out) != "" && !strings.Contains(out, "No MIG-enabled devices found") {
		return nil, fmt.Errorf("nvidia-smi mig -lgip: no profile in %q", firstLine(out))
	}
	return ps, nil
}

// MIGDevice is one MIG device of a GPU, as `nvidia-smi -L` lists it: a
// compute instance in a GPU instance (a GPU instance without a compute
// instance is not listed).
type MIGDevice struct {
	Profile string `json:"profile"`
	UUID    string `json:"uuid,omitempty"`
}

var (
	listGPU = regexp.MustCompile(`^GPU (\d+): .*\(UUID: ([^)]*)\)`)
	listMIG = regexp.MustCompile(`^\s+MIG (\S+)\s+Device\s+(\d+): \(UUID: ([^)]*)\)`)
)

// ParseMIGDevices reads `nvidia-smi -L`: each GPU's MIG devices, by GPU
// index (a GPU without MIG devices has no entry).
func ParseMIGDevices(out string) (map[int][]MIGDevice, error) {
	devs := map[int][]MIGDevice{}
	gpu := -1
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimRight(line, " \r")
		if m := listGPU.FindStringSubmatch(line); m != nil {
			gpu, _ = strconv.Atoi(m[1])
			continue
		}
		if m := listMIG.FindStringSubmatch(line); m != nil {
			if gpu < 0 {
				return nil, fmt.Errorf("nvidia-smi -L: MIG device %q before any GPU", line)
			}
			devs[gpu] = append(devs[gpu], MIGDevice{Profile: m[1], UUID: m[3]})
		}
	}
	return devs, nil
}

// MIGProfiles are the profiles of GPU index (none: MIG is off, or the probe
// did not list them).
func (f *Facts) MIGProfiles(index int) []MIGProfile {
	var out []MIGProfile
	for _, p := range f.MIG {
		if p.GPU == index {
			out = append(out, p)
		}
	}
	return out
}

// MIGCapable says whether the GPU can be partitioned: nvidia-smi reports a
// MIG mode only for GPUs that have one ([N/A] otherwise).
func (g GPU) MIGCapable() bool { return g.MIGMode != "" }

// MIGEnabled says whether MIG mode is on now.
func (g GPU) MIGEnabled() bool { return strings.EqualFold(g.MIGMode, "Enabled") }

// MIGPendingChange says whether a MIG mode change waits for a GPU reset.
func (g GPU) MIGPendingChange() bool {
	return g.MIGPending != "" && !strings.EqualFold(g.MIGPending, g.MIGMode)
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}
