package scriptsim

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"

	"github.com/gpukit/gpukit/pkg/facts"
	"github.com/gpukit/gpukit/test/fixtures"
)

// GPU partitioning (MIG), SIMULATED: each GPU's MIG mode and MIG devices,
// the profiles a real `nvidia-smi mig -lgip` of the host's GPU model lists
// (test/testdata/nvidia-smi/<model>__mig-lgip.txt), and gpukit's boot
// unit, which applies its layout again at every boot (the instances do not
// survive one; the mode does).

// MIGGPU is one GPU's MIG state.
type MIGGPU struct {
	Mode    string   // Enabled, Disabled
	Devices []string // the MIG devices' profiles, in creation order
}

// MIGState is a host's: its GPUs by index, and gpukit's script and unit.
type MIGState struct {
	GPUs map[int]*MIGGPU
	// Script is the installed script (its text: the boot re-runs it);
	// Unit says its boot unit is enabled.
	Script string
	Unit   bool
}

// migProfiles are the GPU-instance profiles the capture's model lists
// (GPU 0's rows of the real -lgip), none for a model without a capture.
func migProfiles(capture string) ([]facts.MIGProfile, string, error) {
	model, _, _ := strings.Cut(filepath.Base(capture), "__")
	dir, why := fixtures.Find("nvidia-smi")
	if dir == "" {
		return nil, "", fmt.Errorf("scriptsim: the nvidia-smi captures: %s", why)
	}
	b, err := os.ReadFile(filepath.Join(dir, model+"__mig-lgip.txt"))
	if os.IsNotExist(err) {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", err
	}
	ps, err := facts.ParseMIGProfiles(string(b))
	var gpu0 []facts.MIGProfile
	for _, p := range ps {
		if p.GPU == 0 {
			gpu0 = append(gpu0, p)
		}
	}
	return gpu0, string(b), err
}

func (h *Host) migGPU(i int) *MIGGPU {
	if h.MIG.GPUs == nil {
		h.MIG.GPUs = map[int]*MIGGPU{}
	}
	g := h.MIG.GPUs[i]
	if g == nil {
		g = &MIGGPU{Mode: "Disabled"}
		h.MIG.GPUs[i] = g
	}
	return g
}

var (
	migSetMode      = regexp.MustCompile(`(?m)^set_mode ([0-9]+) (Enabled|Disabled)$`)
	migSetInstances = regexp.MustCompile(`(?m)^set_instances ([0-9]+) .* '?([0-9,]*)'?$`)
)

// migInstall is mig-install.sh: the script and unit installed (or, with
// none, removed) and the script run.
func (h *Host) migInstall(script string) (string, int, string) {
	f, err := syntax.NewParser().Parse(strings.NewReader(script), "")
	if err != nil {
		return "", 2, err.Error()
	}
	var installed string
	syntax.Walk(f, func(n syntax.Node) bool {
		c, ok := n.(*syntax.CallExpr)
		if ok && len(c.Args) == 3 && c.Args[0].Lit() == "put" {
			var dst strings.Builder
			if syntax.NewPrinter().Print(&dst, c.Args[1]) == nil && dst.String() == `"$script"` {
				installed, _ = expand.Literal(nil, c.Args[2])
			}
		}
		return true
	})
	if installed == "" {
		h.MIG.Script, h.MIG.Unit = "", false
		return "", 0, ""
	}
	h.MIG.Script, h.MIG.Unit = installed, true
	return h.migRun(installed)
}

// migRun runs gpukit's MIG script: each set_mode and set_instances line.
func (h *Host) migRun(script string) (string, int, string) {
	if fail, code := h.smi(); fail != "" {
		return "", code, fail
	}
	set, err := h.gpuSet()
	if err != nil {
		return "", 2, err.Error()
	}
	profiles, _, err := migProfiles(set.c.Prefix)
	if err != nil {
		return "", 2, err.Error()
	}
	listed, _ := set.listed()
	var out strings.Builder
	for _, m := range migSetMode.FindAllStringSubmatch(script, -1) {
		i, _ := strconv.Atoi(m[1])
		if i >= len(listed) {
			return out.String(), 6, fmt.Sprintf("No devices were found (GPU %d)", i)
		}
		if len(profiles) == 0 {
			return out.String(), 3, "Unable to enable MIG Mode for GPU " + listed[i].BusID + ": Not Supported"
		}
		g := h.migGPU(i)
		if g.Mode != m[2] {
			g.Mode, g.Devices = m[2], nil
			fmt.Fprintf(&out, "%s MIG Mode for GPU %s\nAll done.\n", strings.TrimSuffix(m[2], "d")+"d", listed[i].BusID)
		}
	}
	for _, m := range migSetInstances.FindAllStringSubmatch(script, -1) {
		i, _ := strconv.Atoi(m[1])
		g := h.migGPU(i)
		if g.Mode != "Enabled" {
			return out.String(), 5, fmt.Sprintf("GPU %d: MIG mode is not enabled", i)
		}
		var want []string
		for _, id := range strings.Split(m[2], ",") {
			n, err := strconv.Atoi(id)
			k := slices.IndexFunc(profiles, func(p facts.MIGProfile) bool { return p.ID == n })
			if err != nil || k < 0 {
				return out.String(), 2, fmt.Sprintf("Unable to create a GPU instance on GPU %2d using profile %s: Invalid Argument", i, id)
			}
			want = append(want, profiles[k].Name)
		}
		if !sameSet(g.Devices, want) {
			g.Devices = want
			fmt.Fprintf(&out, "gpukit SIMULATOR: GPU %d: created %s\n", i, strings.Join(want, ","))
		}
	}
	return out.String(), 0, ""
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// migState is what nvidia-state.sh reads of MIG: -L, -lgip where a GPU has
// MIG on, the installed script's sha256 and the unit.
func (h *Host) migState(kv func(k, v string)) error {
	set, err := h.gpuSet()
	if err != nil {
		return err
	}
	listed, _ := set.listed()
	anyOn := false
	for i, g := range listed {
		kv("smi.list", fmt.Sprintf("GPU %d: %s (UUID: %s)", i, g.Name, g.UUID))
		if mg := h.MIG.GPUs[i]; mg != nil && mg.Mode == "Enabled" {
			anyOn = true
			for k, d := range mg.Devices {
				kv("smi.list", fmt.Sprintf("  MIG %-11s Device %2d: (UUID: MIG-gpusim-%d-%d)", d, k, i, k))
			}
		}
	}
	if anyOn {
		_, lgip, err := migProfiles(set.c.Prefix)
		if err != nil {
			return err
		}
		for _, line := range strings.Split(strings.TrimSuffix(lgip, "\n"), "\n") {
			kv("smi.lgip", line)
		}
	}
	if h.MIG.Script != "" {
		sum := sha256.Sum256([]byte(h.MIG.Script + "\n"))
		kv("mig.script", hex.EncodeToString(sum[:]))
	}
	if h.MIG.Unit {
		kv("mig.unit", "enabled")
	}
	return nil
}

// migBoot is a boot: the modes stay, the instances go, and gpukit's unit
// creates them again.
func (h *Host) migBoot() {
	for _, g := range h.MIG.GPUs {
		g.Devices = nil
	}
	if h.MIG.Unit && h.Loaded != "" && !h.SMIBroken {
		h.migRun(h.MIG.Script)
	}
}

// migRows sets the MIG fields of --query-gpu rows to the GPUs' modes,
// where the capture reports a MIG mode at all.
func (h *Host) migRows(fields []string, rows []string) {
	for i, r := range rows {
		vals := strings.Split(r, ", ")
		g := h.MIG.GPUs[i]
		for j, f := range fields {
			if (f == "mig.mode.current" || f == "mig.mode.pending") && j < len(vals) && vals[j] != "[N/A]" && g != nil {
				vals[j] = g.Mode
			}
		}
		rows[i] = strings.Join(vals, ", ")
	}
}
