package facts

import (
	"slices"

	"github.com/gpukit/gpukit/pkg/compat"
)

// GPUSummary is what a node's labels say of its GPUs, whatever the
// orchestrator: Swarm and Kubernetes spell it in their own keys.
type GPUSummary struct {
	// Products are the distinct product names, in GPU index order.
	Products []string
	Count    int
	// MemMiB is the memory of the first GPU (0: nvidia-smi did not say).
	MemMiB int64
	// Driver is the loaded driver's version; CUDA the newest CUDA it runs
	// ("" when either is unknown).
	Driver, CUDA string
}

// Summarize reads the GPUs nvidia-smi listed; false when it listed none.
func Summarize(f *Facts) (GPUSummary, bool) {
	if f == nil || len(f.GPUs) == 0 {
		return GPUSummary{}, false
	}
	g := f.GPUs[0]
	s := GPUSummary{Count: len(f.GPUs), MemMiB: g.MemMiB, Driver: g.Driver}
	for _, x := range f.GPUs {
		if !slices.Contains(s.Products, x.Name) {
			s.Products = append(s.Products, x.Name)
		}
	}
	if g.Driver != "" {
		if d, err := compat.ParseDriver(g.Driver); err == nil {
			if c, ok := compat.MaxCUDA(d); ok {
				s.CUDA = c.String()
			}
		}
	}
	return s, true
}
