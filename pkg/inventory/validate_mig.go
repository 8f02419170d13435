package inventory

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
)

// Built-in MIG layouts (spec.nvidia.mig): the names pkg/mig turns into
// GPU instances for each GPU model; all-<profile> is any profile's.
const (
	MIGAllDisabled = "all-disabled"
	MIGAllEnabled  = "all-enabled"
	MIGAllBalanced = "all-balanced"
)

var (
	// A GPU-instance profile as nvidia-smi names it: compute slices, memory,
	// and a media-extension suffix.
	migProfileName = regexp.MustCompile(`^[1-9]g\.[0-9]+gb(\+me|\+gfx|\+me\.all|-me)?$`)
	migLayoutName  = regexp.MustCompile(`^[a-z0-9]([a-z0-9.+-]*[a-z0-9])?$`)
)

// MIGProfileName reports whether s is shaped like a GPU-instance profile.
func MIGProfileName(s string) bool { return migProfileName.MatchString(s) }

// BuiltInMIGLayout reports whether name is a built-in layout, and for
// all-<profile> which profile.
func BuiltInMIGLayout(name string) (profile string, ok bool) {
	switch name {
	case MIGAllDisabled, MIGAllEnabled, MIGAllBalanced:
		return "", true
	}
	if p, found := strings.CutPrefix(name, "all-"); found && MIGProfileName(p) {
		return p, true
	}
	return "", false
}

// checkMIG checks the layouts' shape and that every name used is a layout;
// whether a GPU holds a layout is checked against its probed model.
func (c *checker) checkMIG(cl *Cluster) {
	m := &cl.Spec.NVIDIA.MIG
	const p = "spec.nvidia.mig"
	for _, name := range slices.Sorted(maps.Keys(m.Layouts)) {
		path := joinKey(p+".layouts", name)
		if _, builtin := BuiltInMIGLayout(name); builtin {
			c.errorAtKey(path, "layout %s is a built-in layout's name; give yours another", q(name))
		} else if !migLayoutName.MatchString(name) {
			c.errorAtKey(path, "invalid layout name %s; expected lowercase letters, digits, '.', '+' and '-'", q(name))
		}
		c.checkMIGGroups(path, m.Layouts[name])
	}
	known := func(path, name string) {
		if name == "" {
			c.errorf(path, "a layout is required: %s, %s, %s, all-<profile> (all-1g.10gb) or one of spec.nvidia.mig.layouts", MIGAllDisabled, MIGAllEnabled, MIGAllBalanced)
			return
		}
		if _, builtin := BuiltInMIGLayout(name); builtin {
			return
		}
		if _, ok := m.Layouts[name]; !ok {
			c.errorf(path, "unknown MIG layout %s; expected %s, %s, %s, all-<profile> (all-1g.10gb)%s", q(name), MIGAllDisabled, MIGAllEnabled, MIGAllBalanced, siteLayouts(m.Layouts))
		}
	}
	if m.Layout != "" {
		known(p+".layout", m.Layout)
	}
	for i, r := range m.Rules {
		path := fmt.Sprintf("%s.rules[%d]", p, i)
		known(path+".layout", r.Layout)
		c.checkLabels(path+".labels", r.Labels)
	}
	for i, h := range cl.Spec.Hosts {
		if h.MIG != "" {
			known(fmt.Sprintf("spec.hosts[%d].mig", i), h.MIG)
		}
	}
}

func siteLayouts(ls map[string][]MIGGroup) string {
	if len(ls) == 0 {
		return " or a layout of your own in spec.nvidia.mig.layouts"
	}
	return " or one of spec.nvidia.mig.layouts: " + strings.Join(slices.Sorted(maps.Keys(ls)), ", ")
}

func (c *checker) checkMIGGroups(path string, groups []MIGGroup) {
	if len(groups) == 0 {
		c.errorf(path, "a layout needs at least one group of GPUs ({gpus: [0, 1], profiles: {3g.40gb: 2}})")
	}
	seen := map[int]bool{}
	rest := false
	for j, g := range groups {
		gpath := fmt.Sprintf("%s[%d]", path, j)
		if len(g.GPUs) == 0 && len(g.DeviceFilter) == 0 {
			if rest {
				c.errorf(gpath+".gpus", "two groups name no GPUs and no model; only one may take the GPUs the others do not name")
			}
			rest = true
		}
		for k, f := range g.DeviceFilter {
			if strings.TrimSpace(f) == "" {
				c.errorf(fmt.Sprintf("%s.deviceFilter[%d]", gpath, k), "an empty device filter; expected part of a product name (A100-SXM4-80GB) or a PCI device id (20b2)")
			}
		}
		for k, i := range g.GPUs {
			switch {
			case i < 0 || i > 63:
				c.errorf(fmt.Sprintf("%s.gpus[%d]", gpath, k), "GPU index %d out of range; expected 0 to 63 (nvidia-smi -i)", i)
			case seen[i] && len(g.DeviceFilter) == 0:
				c.errorf(fmt.Sprintf("%s.gpus[%d]", gpath, k), "GPU %d is in two groups of the layout", i)
			}
			seen[i] = true
		}
		enabled := g.Enabled == nil || *g.Enabled
		if !enabled && len(g.Profiles) > 0 {
			c.errorf(gpath+".profiles", "MIG is disabled on these GPUs (enabled: false); they can hold no GPU instance")
		}
		for _, name := range slices.Sorted(maps.Keys(g.Profiles)) {
			ppath := joinKey(gpath+".profiles", name)
			if !MIGProfileName(name) {
				c.errorAtKey(ppath, "invalid GPU-instance profile %s; expected a name such as 1g.10gb, 3g.40gb or 1g.10gb+me (nvidia-smi mig -lgip)", q(name))
			}
			if n := g.Profiles[name]; n < 1 || n > 7 {
				c.errorf(ppath, "%d instances of %s; a GPU holds 1 to 7", n, name)
			}
		}
	}
}
