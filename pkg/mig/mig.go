// Package mig decides how a host's GPUs are partitioned (Multi-Instance
// GPU): the layout the inventory gives the host, turned into each GPU's
// GPU instances and checked against what that GPU model can hold (the bill
// of materials' profile table, narrowed to the profiles the GPU itself lists
// once its MIG mode is on), and whether a GPU already is as wanted.
package mig

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/gpukit/gpukit/manifests"
	"github.com/gpukit/gpukit/pkg/facts"
)

// Profile is a GPU-instance profile of one GPU model.
type Profile struct {
	Name string
	ID   int
	// Max instances at once; each takes Slices memory slices from one of
	// Starts, and Compute compute slices.
	Max, Slices, Compute int
	Starts               []int
}

// Model is what one GPU can hold.
type Model struct {
	Name                        string
	MemorySlices, ComputeSlices int
	Profiles                    []Profile
}

// Profile looks a profile up by name.
func (m Model) Profile(name string) (Profile, bool) {
	i := slices.IndexFunc(m.Profiles, func(p Profile) bool { return p.Name == name })
	if i < 0 {
		return Profile{}, false
	}
	return m.Profiles[i], true
}

func (m Model) names() string {
	var out []string
	for _, p := range m.Profiles {
		out = append(out, p.Name)
	}
	return strings.Join(out, ", ")
}

// ModelOf is GPU g's model on a host with facts f whose driver branch is
// branch (0: not known). A GPU with MIG on lists its profiles: only those
// count, with the GPU's own ids and counts. A GPU the bill does not know is
// modelled from its listing alone; with MIG off it cannot be checked.
func ModelOf(f *facts.Facts, g facts.GPU, branch int) (Model, error) {
	if !g.MIGCapable() {
		return Model{}, fmt.Errorf("%s has no MIG mode (nvidia-smi reports none)", g.Name)
	}
	listed := f.MIGProfiles(g.Index)
	bill, known := manifests.Bill().MIGGPU(g.Name, "")
	switch {
	case known:
		m := Model{Name: bill.Name, MemorySlices: bill.MemorySlices, ComputeSlices: bill.ComputeSlices}
		for _, p := range bill.Profiles {
			c, _ := manifests.ComputeSlices(p.Name)
			mp := Profile{Name: p.Name, ID: p.ID, Max: p.Max, Slices: p.Slices, Compute: c, Starts: p.Starts}
			if len(listed) > 0 {
				i := slices.IndexFunc(listed, func(l facts.MIGProfile) bool { return l.Name == p.Name })
				if i < 0 {
					continue // this driver does not offer it
				}
				mp.ID, mp.Max = listed[i].ID, listed[i].Total
			} else if p.MinBranch > 0 && branch > 0 && branch < p.MinBranch {
				continue
			}
			m.Profiles = append(m.Profiles, mp)
		}
		return m, nil
	case len(listed) > 0:
		return FromListing(g.Name, listed), nil
	}
	return Model{}, fmt.Errorf("%s: gpukit's table of MIG profiles does not know this GPU, and with MIG off it lists none: turn MIG on (layout all-enabled) first, or name it in a rule with a layout it can hold", g.Name)
}

// FromListing models a GPU the bill lacks from its -lgip: a profile's
// memory slices from its memory against the whole GPU's (eight slices, as
// every MIG GPU but A30 has); as many aligned placements as the GPU holds
// instances of it, as NVIDIA's placements go on every MIG GPU; a media
// variant (1g.10gb+me) placed as its base profile.
func FromListing(name string, listed []facts.MIGProfile) Model {
	whole := 0.0
	for _, l := range listed {
		whole = math.Max(whole, l.MemGiB)
	}
	m := Model{Name: name, MemorySlices: 8, ComputeSlices: 7}
	for _, l := range listed {
		c, _ := manifests.ComputeSlices(l.Name)
		s := max(1, int(math.Round(l.MemGiB*8/whole)))
		if s > 4 && s < 8 {
			s = 8
		} else if s == 3 {
			s = 4
		}
		p := Profile{Name: l.Name, ID: l.ID, Max: l.Total, Slices: s, Compute: c}
		places := l.Total
		if base, _, media := strings.Cut(l.Name, "+"); media {
			if i := slices.IndexFunc(listed, func(b facts.MIGProfile) bool { return b.Name == base }); i >= 0 {
				places = listed[i].Total
			}
		}
		for st := 0; st+s <= 8 && len(p.Starts) < places; st += s {
			p.Starts = append(p.Starts, st)
		}
		m.Profiles = append(m.Profiles, p)
	}
	return m
}

// Placement is where one instance goes: its memory slices [Start,
// Start+Slices).
type Placement struct {
	Profile       Profile
	Start, Slices int
}

// Order sorts profile names as they are created: the largest first, so
// that a first-fit placement leaves no gap a later one needs.
func (m Model) Order(names []string) []string {
	out := slices.Clone(names)
	slices.SortStableFunc(out, func(a, b string) int {
		pa, _ := m.Profile(a)
		pb, _ := m.Profile(b)
		return cmp.Or(cmp.Compare(pb.Slices, pa.Slices), cmp.Compare(pb.Compute, pa.Compute), strings.Compare(a, b))
	})
	return out
}

// Place fits the instances onto the GPU: each at one of its profile's
// placements, no two sharing a memory slice, within the GPU's compute
// slices and each profile's count. It searches every arrangement (the
// driver does not take the lowest free start: on an A100, 1g, 1g, 2g and
// 3g fit only with the 3g at slice 4), largest first; an error names what
// does not fit.
func (m Model) Place(names []string) ([]Placement, error) {
	ordered := m.Order(names)
	compute, count := 0, map[string]int{}
	var ps []Profile
	for _, name := range ordered {
		p, ok := m.Profile(name)
		if !ok {
			return nil, fmt.Errorf("%s offers no profile %s; it offers %s", m.Name, name, m.names())
		}
		if count[name]++; count[name] > p.Max {
			return nil, fmt.Errorf("%s holds at most %d instance(s) of %s, not %d", m.Name, p.Max, name, countOf(names, name))
		}
		compute += p.Compute
		ps = append(ps, p)
	}
	if compute > m.ComputeSlices {
		return nil, fmt.Errorf("%s has %d compute slices; %s take %d", m.Name, m.ComputeSlices, describe(ordered), compute)
	}
	used := make([]bool, m.MemorySlices)
	out := make([]Placement, len(ps))
	var place func(i int) bool
	place = func(i int) bool {
		if i == len(ps) {
			return true
		}
		p := ps[i]
		for _, st := range p.Starts {
			if st+p.Slices > len(used) || slices.Contains(used[st:st+p.Slices], true) {
				continue
			}
			// Equal instances in ascending starts: the same arrangement is
			// not searched once per permutation.
			if i > 0 && ps[i-1].Name == p.Name && st < out[i-1].Start {
				continue
			}
			mark(used, st, p.Slices, true)
			out[i] = Placement{Profile: p, Start: st, Slices: p.Slices}
			if place(i + 1) {
				return true
			}
			mark(used, st, p.Slices, false)
		}
		return false
	}
	if !place(0) {
		return nil, fmt.Errorf("%s cannot place %s: their memory slices overlap in every arrangement (nvidia-smi mig -lgipp lists the placements)", m.Name, describe(ordered))
	}
	return out, nil
}

func mark(used []bool, start, n int, v bool) {
	for i := start; i < start+n; i++ {
		used[i] = v
	}
}

func countOf(names []string, name string) int {
	n := 0
	for _, x := range names {
		if x == name {
			n++
		}
	}
	return n
}

// describe writes a list of instances as 3g.40gb x1 + 1g.10gb x4.
func describe(names []string) string {
	counts := map[string]int{}
	var order []string
	for _, n := range names {
		if counts[n] == 0 {
			order = append(order, n)
		}
		counts[n]++
	}
	var out []string
	for _, n := range order {
		out = append(out, fmt.Sprintf("%s x%d", n, counts[n]))
	}
	return strings.Join(out, " + ")
}

// Expand writes a group's profile counts as one name per instance.
func Expand(profiles map[string]int) []string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(profiles)) {
		for range profiles[name] {
			out = append(out, name)
		}
	}
	return out
}
