package scriptsim

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"

	"github.com/gpukit/gpukit/test/fixtures"
	"github.com/gpukit/gpukit/test/gpusim/migsim"
)

// GPU partitioning (MIG), SIMULATED with test/gpusim/migsim: each GPU's
// MIG mode and instances, the profiles a real `nvidia-smi mig -lgip` of the
// host's GPU model lists (test/testdata/nvidia-smi/<model>__mig-lgip.txt),
// and gpukit's boot unit, which applies its layout again at every boot (the
// instances do not survive one; the mode does).

// MIGState is a host's: its GPUs by index (test/gpusim/migsim, the model
// the lab's stand-in nvidia-smi keeps too), and gpukit's script and unit.
type MIGState struct {
	GPUs map[int]*migsim.GPU
	// Script is the installed script (its text: the boot re-runs it);
	// Unit says its boot unit is enabled.
	Script string
	Unit   bool
}

// migModel is the capture's model: the real -lgip beside the captures.
func migModel(capture string) (migsim.Model, bool, error) {
	prefix := capture
	if !strings.Contains(capture, "/") {
		dir, why := fixtures.Find("nvidia-smi")
		if dir == "" {
			return migsim.Model{}, false, fmt.Errorf("scriptsim: the nvidia-smi captures: %s", why)
		}
		prefix = filepath.Join(dir, capture)
	}
	return migsim.Load(migsim.LGIPFile(prefix))
}

// Devices are a GPU's MIG devices' profiles (instances with a compute
// instance), in creation order.
func Devices(g *migsim.GPU) []string {
	var out []string
	for _, in := range g.Instances {
		if in.Compute {
			out = append(out, in.Profile)
		}
	}
	return out
}

func (h *Host) migGPU(i int) *migsim.GPU {
	if h.MIG.GPUs == nil {
		h.MIG.GPUs = map[int]*migsim.GPU{}
	}
	g := h.MIG.GPUs[i]
	if g == nil {
		g = &migsim.GPU{Mode: "Disabled", Pending: "Disabled"}
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

// migRun runs gpukit's MIG script: each set_mode and set_instances line,
// as the script does them (modes at once, as on Hopper; instances
// destroyed and created again where they differ).
func (h *Host) migRun(script string) (string, int, string) {
	if fail, code := h.smi(); fail != "" {
		return "", code, fail
	}
	set, err := h.gpuSet()
	if err != nil {
		return "", 2, err.Error()
	}
	model, hasMIG, err := migModel(set.c.Prefix)
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
		if !hasMIG {
			return out.String(), 3, "Unable to enable MIG Mode for GPU " + listed[i].BusID + ": Not Supported"
		}
		g := h.migGPU(i)
		if g.Mode != m[2] {
			g.Mode, g.Pending, g.Instances = m[2], m[2], nil
			fmt.Fprintf(&out, "gpukit: GPU %d: MIG mode %s\n", i, m[2])
		}
	}
	for _, m := range migSetInstances.FindAllStringSubmatch(script, -1) {
		i, _ := strconv.Atoi(m[1])
		g := h.migGPU(i)
		var want []migsim.Profile
		for _, id := range strings.Split(m[2], ",") {
			p, ok := model.Profile(id)
			if !ok {
				return out.String(), 2, fmt.Sprintf("Unable to create a GPU instance on GPU %2d using profile %s: Not Found", i, id)
			}
			want = append(want, p)
		}
		var names []string
		for _, p := range want {
			names = append(names, p.Name)
		}
		if sameSet(Devices(g), names) {
			continue
		}
		g.Instances = nil
		for _, p := range want {
			if _, err := g.Create(model, p, true); err != nil {
				return out.String(), 23, fmt.Sprintf("Unable to create a GPU instance on GPU %2d using profile %d: %v", i, p.ID, err)
			}
		}
		fmt.Fprintf(&out, "gpukit SIMULATOR: GPU %d: created %s\n", i, strings.Join(names, ","))
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
			for k, d := range Devices(mg) {
				kv("smi.list", fmt.Sprintf("  MIG %-11s Device %2d: (UUID: MIG-gpusim-%d-%d)", d, k, i, k))
			}
		}
	}
	if anyOn {
		model, _, err := migModel(set.c.Prefix)
		if err != nil {
			return err
		}
		for _, line := range strings.Split(strings.TrimSuffix(migsim.RenderLGIP(model, h.MIG.GPUs), "\n"), "\n") {
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
		g.Mode, g.Instances = g.Pending, nil
	}
	if h.MIG.Unit && h.Loaded != "" && !h.SMIBroken {
		h.migRun(h.MIG.Script)
	}
}

// migRows sets the MIG fields of --query-gpu rows to the GPUs' modes,
// where the capture reports a MIG mode at all.
func (h *Host) migRows(fields []string, rows []string) {
	for i, r := range rows {
		rows[i] = migsim.SetModes(fields, r, h.MIG.GPUs[i])
	}
}
