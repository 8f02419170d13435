// Package migsim is the GPU SIMULATOR's MIG (Multi-Instance GPU): each
// simulated GPU's MIG mode and GPU instances, kept by the lab's stand-in
// nvidia-smi (cmd/nvidia-smi) and by the unit tests' scriptsim. Test
// tooling only, never shipped.
//
// The profiles are a real `nvidia-smi mig -lgip` of the GPU's model
// (test/testdata/nvidia-smi/<model>__mig-lgip.txt): names, ids, how many
// of each; their memory slices and placements as pkg/mig reads a listing
// (mig.FromListing: slices in proportion to memory, of eight; the aligned
// starts the count allows; a media variant where its base profile goes).
// Which placement a new instance takes is the simulator's own: the start
// that leaves the most placements free for later ones, the lowest on a tie. That choice matches
// the real placements published for A100 sessions: 3g.20gb first goes to
// slice 4, a 1g.5gb after a 2g.10gb at 4 goes to 6.
package migsim

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gpukit/gpukit/pkg/facts"
	"github.com/gpukit/gpukit/pkg/mig"
)

// Profile is a GPU-instance profile with its simulated placements.
type Profile struct {
	facts.MIGProfile
	Slices, Compute int
	Starts          []int
}

// Model is what one GPU model offers.
type Model struct {
	Profiles []Profile
	// LGIP is the real capture, GPU 0's block kept for rendering.
	LGIP string
}

// Profile looks a profile up by id or name.
func (m Model) Profile(idOrName string) (Profile, bool) {
	for _, p := range m.Profiles {
		if fmt.Sprint(p.ID) == idOrName || p.Name == idOrName || "MIG "+p.Name == idOrName {
			return p, true
		}
	}
	return Profile{}, false
}

// LGIPFile is the -lgip capture of a capture prefix's model: PREFIX__mig-lgip.txt
// where the capture was copied with one, else <model>__mig-lgip.txt beside
// it (the model is the name before "__", less a "-mig..." variant suffix).
func LGIPFile(prefix string) string {
	if _, err := os.Stat(prefix + "__mig-lgip.txt"); err == nil {
		return prefix + "__mig-lgip.txt"
	}
	model, _, _ := strings.Cut(filepath.Base(prefix), "__")
	model, _, _ = strings.Cut(model, "-mig")
	return filepath.Join(filepath.Dir(prefix), model+"__mig-lgip.txt")
}

// Load reads a model from its -lgip capture; ok is false where there is
// none (the GPU has no MIG in the simulation).
func Load(file string) (Model, bool, error) {
	b, err := os.ReadFile(file)
	if os.IsNotExist(err) {
		return Model{}, false, nil
	}
	if err != nil {
		return Model{}, false, err
	}
	all, err := facts.ParseMIGProfiles(string(b))
	if err != nil {
		return Model{}, false, err
	}
	var listed []facts.MIGProfile
	for _, p := range all {
		if p.GPU == 0 {
			listed = append(listed, p)
		}
	}
	return model(listed, string(b)), len(listed) > 0, nil
}

func model(listed []facts.MIGProfile, lgip string) Model {
	// Memory slices and placements as gpukit reads a listing (mig.FromListing);
	// which placement an instance takes is the simulator's own (Create).
	placed := mig.FromListing("", listed)
	m := Model{LGIP: lgip}
	for i, l := range listed {
		p := placed.Profiles[i]
		m.Profiles = append(m.Profiles, Profile{MIGProfile: l, Slices: p.Slices, Compute: p.Compute, Starts: p.Starts})
	}
	return m
}

// Instance is a GPU instance (with its one compute instance, or none).
type Instance struct {
	ID      int    `json:"id"`
	Profile string `json:"profile"`
	Start   int    `json:"start"`
	Slices  int    `json:"slices"`
	Compute bool   `json:"compute"`
}

// GPU is one GPU's MIG state.
type GPU struct {
	Mode      string     `json:"mode"`    // Enabled, Disabled
	Pending   string     `json:"pending"` // the mode at the next reset
	Instances []Instance `json:"instances,omitempty"`
}

func (g *GPU) used(m Model) (mem []bool, compute int, count map[string]int) {
	mem, count = make([]bool, 8), map[string]int{}
	for _, in := range g.Instances {
		for s := in.Start; s < in.Start+in.Slices; s++ {
			mem[s] = true
		}
		if p, ok := m.Profile(in.Profile); ok {
			compute += p.Compute
		}
		count[in.Profile]++
		if base, _, ok := strings.Cut(in.Profile, "+"); ok {
			count[base]++
		}
	}
	return mem, compute, count
}

// free are the starts where p could go now.
func (g *GPU) free(m Model, p Profile) []int {
	mem, compute, count := g.used(m)
	if compute+p.Compute > 7 || count[p.Name] >= p.Total {
		return nil
	}
	var out []int
	for _, st := range p.Starts {
		if !slices.Contains(mem[st:st+p.Slices], true) {
			out = append(out, st)
		}
	}
	return out
}

// Free is how many more instances of p could be created now, as -lgip's
// Free column counts them.
func (g *GPU) Free(m Model, p Profile) int {
	n := 0
	trial := &GPU{Mode: g.Mode, Instances: slices.Clone(g.Instances)}
	for {
		if _, err := trial.Create(m, p, false); err != nil {
			return n
		}
		n++
	}
}

// Create makes a GPU instance of p (and its compute instance) at the start
// that leaves the most placements free.
func (g *GPU) Create(m Model, p Profile, compute bool) (Instance, error) {
	if g.Mode != "Enabled" {
		return Instance{}, fmt.Errorf("Not Supported") // MIG mode off
	}
	starts := g.free(m, p)
	if len(starts) == 0 {
		return Instance{}, fmt.Errorf("Insufficient Resources")
	}
	best, bestLeft := -1, -1
	for _, st := range starts {
		trial := &GPU{Mode: g.Mode, Instances: append(slices.Clone(g.Instances), Instance{Profile: p.Name, Start: st, Slices: p.Slices})}
		left := 0
		for _, q := range m.Profiles {
			left += len(trial.free(m, q))
		}
		if left > bestLeft {
			best, bestLeft = st, left
		}
	}
	id := 1
	for slices.ContainsFunc(g.Instances, func(in Instance) bool { return in.ID == id }) {
		id++
	}
	in := Instance{ID: id, Profile: p.Name, Start: best, Slices: p.Slices, Compute: compute}
	g.Instances = append(g.Instances, in)
	return in, nil
}

// RenderLGIP is -lgip for the GPUs (index -> state) with MIG on: the real
// capture's rows of GPU 0, numbered and counted for each.
func RenderLGIP(m Model, gpus map[int]*GPU) string {
	var head, rows []string
	inRows := false
	for _, line := range strings.Split(strings.TrimSuffix(m.LGIP, "\n"), "\n") {
		if strings.HasPrefix(line, "|===") {
			head = append(head, line)
			inRows = true
			continue
		}
		if !inRows {
			head = append(head, line)
		} else if len(rows) < 3*len(m.Profiles) {
			rows = append(rows, line)
		}
	}
	var b strings.Builder
	b.WriteString(strings.Join(head, "\n") + "\n")
	for _, i := range sortedKeys(gpus) {
		g := gpus[i]
		for k, line := range rows {
			if k%3 == 0 {
				p := m.Profiles[k/3]
				line = strings.Replace(line, "|   0  MIG", fmt.Sprintf("|%4d  MIG", i), 1)
				line = strings.Replace(line, fmt.Sprintf("%d/%d", p.Free, p.Total), fmt.Sprintf("%d/%d", g.Free(m, p), p.Total), 1)
			}
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}

func sortedKeys(gpus map[int]*GPU) []int {
	var out []int
	for i, g := range gpus {
		if g.Mode == "Enabled" {
			out = append(out, i)
		}
	}
	slices.Sort(out)
	return out
}

// SetModes puts g's MIG mode and pending mode into one --query-gpu row of
// fields (a GPU whose capture reports no MIG mode, [N/A], keeps it).
func SetModes(fields []string, row string, g *GPU) string {
	vals := strings.Split(row, ", ")
	for j, f := range fields {
		if j >= len(vals) || g == nil || strings.Contains(vals[j], "N/A") {
			continue
		}
		switch f {
		case "mig.mode.current":
			vals[j] = g.Mode
		case "mig.mode.pending":
			vals[j] = g.Pending
		}
	}
	return strings.Join(vals, ", ")
}
