package mig

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/gpukit/gpukit/pkg/facts"
	"github.com/gpukit/gpukit/pkg/inventory"
)

// Want is one GPU as its layout wants it.
type Want struct {
	Index   int  `json:"index"`
	Enabled bool `json:"enabled"`
	// Profiles are its GPU instances in the order they are created, IDs
	// their profile ids on this GPU.
	Profiles []string `json:"profiles,omitempty"`
	IDs      []int    `json:"ids,omitempty"`
}

// HostWant is a host's layout, resolved.
type HostWant struct {
	// Layout and From say which layout and where the inventory names it.
	Layout, From string
	GPUs         []Want
	// Skipped are the host's GPUs the layout leaves alone, and why.
	Skipped []string
}

// Error is a layout a host's GPU cannot hold: plan and preflight refuse it.
type Error struct {
	Host, Layout, From string
	GPU                int
	Product            string
	Err                error
}

func (e *Error) Error() string {
	return fmt.Sprintf("GPU %d (%s): MIG layout %s (%s): %v", e.GPU, e.Product, e.Layout, e.From, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// Resolve is the layout of machine m (whose probed facts are f, driver
// branch branch) for each of its GPUs. ok is false when the inventory gives
// the host no layout: MIG is left alone. A GPU without MIG is skipped under
// a layout every MIG host gets (spec.nvidia.mig.layout, a rule naming no
// GPU model, an all-* layout); one a site layout names by index is an error.
func Resolve(spec *inventory.Spec, m inventory.Machine, f *facts.Facts, branch int) (hw HostWant, ok bool, err error) {
	product := ""
	if f != nil && len(f.GPUs) > 0 {
		product = f.GPUs[0].Name
	}
	hw.Layout, hw.From = m.MIGLayout(spec, product)
	if hw.Layout == "" || f == nil {
		return hw, false, nil
	}
	site, isSite := spec.NVIDIA.MIG.Layouts[hw.Layout]
	ids := deviceIDs(f)
	for _, g := range f.GPUs {
		fail := func(err error) error {
			return &Error{Host: m.Name, Layout: hw.Layout, From: hw.From, GPU: g.Index, Product: g.Name, Err: err}
		}
		group, named := groupOf(site, g, ids[g.BusID])
		if isSite && group == nil {
			hw.Skipped = append(hw.Skipped, fmt.Sprintf("GPU %d: no group of layout %s names it", g.Index, hw.Layout))
			continue
		}
		if !g.MIGCapable() {
			if named && (group.Enabled == nil || *group.Enabled) {
				return hw, true, fail(fmt.Errorf("%s has no MIG mode", g.Name))
			}
			hw.Skipped = append(hw.Skipped, fmt.Sprintf("GPU %d (%s): no MIG mode", g.Index, g.Name))
			continue
		}
		w := Want{Index: g.Index, Enabled: true}
		var names []string
		switch {
		case isSite:
			w.Enabled = group.Enabled == nil || *group.Enabled
			names = Expand(group.Profiles)
		case hw.Layout == inventory.MIGAllDisabled:
			w.Enabled = false
		case hw.Layout == inventory.MIGAllEnabled:
		default:
			model, err := ModelOf(f, g, branch)
			if err != nil {
				return hw, true, fail(err)
			}
			if names, err = builtIn(model, hw.Layout); err != nil {
				return hw, true, fail(err)
			}
		}
		if len(names) > 0 {
			model, err := ModelOf(f, g, branch)
			if err != nil {
				return hw, true, fail(err)
			}
			placed, err := model.Place(names)
			if err != nil {
				return hw, true, fail(err)
			}
			for _, p := range placed {
				w.Profiles = append(w.Profiles, p.Profile.Name)
				w.IDs = append(w.IDs, p.Profile.ID)
			}
		}
		hw.GPUs = append(hw.GPUs, w)
	}
	return hw, true, nil
}

// groupOf is the group of a site layout that holds GPU g: the first naming
// its index, else the first naming none, among the groups whose device
// filter (if any) matches its model (deviceID: its PCI device id, "" when
// not known). named says it was named.
func groupOf(groups []inventory.MIGGroup, g facts.GPU, deviceID string) (grp *inventory.MIGGroup, named bool) {
	for _, byIndex := range []bool{true, false} {
		for k := range groups {
			gr := &groups[k]
			if !matchesDevice(gr.DeviceFilter, g.Name, deviceID) {
				continue
			}
			if byIndex && slices.Contains(gr.GPUs, g.Index) || !byIndex && len(gr.GPUs) == 0 {
				return gr, byIndex || len(gr.DeviceFilter) > 0
			}
		}
	}
	return nil, false
}

// matchesDevice says whether a GPU named product with PCI device id
// deviceID (0x20b2) is one of filter's: part of its name, or its device
// id in any of the forms 20b2, 0x20b2, 0x20B210DE (mig-parted's, vendor
// appended).
func matchesDevice(filter []string, product, deviceID string) bool {
	if len(filter) == 0 {
		return true
	}
	id := strings.TrimPrefix(strings.ToLower(deviceID), "0x")
	for _, f := range filter {
		lf := strings.TrimPrefix(strings.ToLower(strings.TrimSpace(f)), "0x")
		if strings.HasSuffix(lf, "10de") && len(lf) == 8 {
			lf = lf[:4]
		}
		if id != "" && lf == id || strings.Contains(strings.ToLower(product), strings.ToLower(strings.TrimSpace(f))) {
			return true
		}
	}
	return false
}

// deviceIDs are the PCI device ids of a host's GPUs by nvidia-smi's bus id.
func deviceIDs(f *facts.Facts) map[string]string {
	out := map[string]string{}
	for _, g := range f.GPUs {
		for _, d := range f.PCIGPUs {
			if facts.SamePCIAddress(g.BusID, d.Address) {
				out[g.BusID] = d.DeviceID
			}
		}
	}
	return out
}

// builtIn lists the instances of a built-in layout on a model.
func builtIn(m Model, layout string) ([]string, error) {
	if layout == inventory.MIGAllBalanced {
		// Two of the smallest one-slice profile, one two-slice and one
		// three-slice instance: the mix NVIDIA's MIG manager calls
		// all-balanced, on GPUs that have them (A30: no 3g).
		var out []string
		for _, want := range []struct{ compute, n int }{{1, 2}, {2, 1}, {3, 1}} {
			i := slices.IndexFunc(m.Profiles, func(p Profile) bool {
				return p.Compute == want.compute && !strings.Contains(p.Name, "+")
			})
			if i < 0 {
				continue
			}
			for range want.n {
				out = append(out, m.Profiles[i].Name)
			}
		}
		if _, err := m.Place(out); err != nil {
			return nil, err
		}
		return out, nil
	}
	profile, _ := inventory.BuiltInMIGLayout(layout)
	p, ok := m.Profile(profile)
	if !ok {
		return nil, fmt.Errorf("%s offers no profile %s; it offers %s", m.Name, profile, m.names())
	}
	// As many as fit.
	var out []string
	for range p.Max {
		if _, err := m.Place(append(out, profile)); err != nil {
			break
		}
		out = append(out, profile)
	}
	return out, nil
}

// Differs says how GPU g differs from w ("" when it is as wanted): its MIG
// mode, a mode change waiting for a reset, its MIG devices.
func Differs(g facts.GPU, w Want) string {
	switch {
	case w.Enabled != g.MIGEnabled():
		return fmt.Sprintf("MIG mode %s, want %s", mode(g.MIGEnabled()), mode(w.Enabled))
	case g.MIGPendingChange():
		return fmt.Sprintf("MIG mode %s until the GPU is reset (pending %s)", g.MIGMode, g.MIGPending)
	}
	var have []string
	for _, d := range g.MIGDevices {
		have = append(have, d.Profile)
	}
	want := slices.Clone(w.Profiles)
	slices.Sort(have)
	slices.Sort(want)
	if !slices.Equal(have, want) {
		return fmt.Sprintf("instances %s, want %s", orNone(describe(have)), orNone(describe(want)))
	}
	return ""
}

func mode(on bool) string {
	if on {
		return "Enabled"
	}
	return "Disabled"
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// Digest names an inventory's MIG layouts (spec.nvidia.mig and the hosts'
// own): a rollout of them resumes only with the same.
func Digest(inv *inventory.Inventory) string {
	hosts := map[string]string{}
	for _, m := range inv.Machines {
		if m.MIG != "" {
			hosts[m.Name] = m.MIG
		}
	}
	b, _ := json.Marshal(struct {
		Spec  inventory.MIG
		Hosts map[string]string
	}{inv.Cluster.Spec.NVIDIA.MIG, hosts})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:6])
}
