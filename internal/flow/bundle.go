package flow

import (
	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/preflight"
)

// NewBundleList is `gpukit bundle list`: every host's facts (its OS family,
// kernel and GPUs decide its packages), read in one round trip; nothing is
// changed. The command works the list out from the summary's facts with
// pkg/bundle, which sits above the flows' layers (it reads every layer's
// decisions) and so is not imported here.
func NewBundleList(inv *inventory.Inventory) Flow {
	return Flow{
		Name:     "gpukit bundle list",
		Machines: inv.Machines,
		Phases: []engine.Phase{
			preflight.New(inv).Facts(), // preflight/facts  probe each host in one round trip
		},
	}
}
