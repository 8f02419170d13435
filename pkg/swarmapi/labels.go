package swarmapi

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/gpukit/gpukit/pkg/facts"
	"github.com/gpukit/gpukit/pkg/inventory"
)

// LabelPrefix starts every node label gpukit derives from the host's facts.
// Labels with it that the facts no longer give are removed; the inventory's
// own labels are added as written and never removed (they are the user's).
const LabelPrefix = "gpukit."

// Node labels from the facts, for placement constraints
// (--constraint node.labels.gpukit.gpu.product==...).
const (
	// LabelGPU is "true" on every GPU node: a constraint can ask for one
	// (Docker's constraints cannot ask whether a label is there).
	LabelGPU        = LabelPrefix + "gpu"
	LabelGPUProduct = LabelPrefix + "gpu.product"
	LabelGPUCount   = LabelPrefix + "gpu.count"
	LabelGPUMemory  = LabelPrefix + "gpu.memory-mib"
	LabelDriver     = LabelPrefix + "nvidia.driver"
	LabelCUDA       = LabelPrefix + "nvidia.cuda"
)

// NodeLabels are the labels a host's node carries: from its GPUs (product,
// count, memory of one GPU, driver, and the newest CUDA the driver runs, as
// nvidia-smi shows it) and from the inventory.
func NodeLabels(m inventory.Machine, f *facts.Facts) map[string]string {
	out := map[string]string{}
	if g, ok := facts.Summarize(f); ok {
		out[LabelGPU] = "true"
		out[LabelGPUProduct] = strings.Join(g.Products, ",")
		out[LabelGPUCount] = strconv.Itoa(g.Count)
		if g.MemMiB > 0 {
			out[LabelGPUMemory] = strconv.FormatInt(g.MemMiB, 10)
		}
		if g.Driver != "" {
			out[LabelDriver] = g.Driver
		}
		if g.CUDA != "" {
			out[LabelCUDA] = g.CUDA
		}
	}
	maps.Copy(out, m.Labels)
	return out
}

// LabelOptions are the `docker node update` options that turn have into
// want: every wanted label that differs is added; gpukit's own labels
// (LabelPrefix) that are no longer wanted are removed. Sorted, so the same
// change renders the same script.
func LabelOptions(have, want map[string]string) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if v, ok := have[k]; !ok || v != want[k] {
			out = append(out, "--label-add", k+"="+want[k])
		}
	}
	for _, k := range slices.Sorted(maps.Keys(have)) {
		if _, ok := want[k]; !ok && strings.HasPrefix(k, LabelPrefix) {
			out = append(out, "--label-rm", k)
		}
	}
	return out
}
