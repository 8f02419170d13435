package flow

import (
	"github.com/gpukit/gpukit/pkg/bundlehost"
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

// NewBundleServe is `gpukit bundle serve`: the bundle of spec.bundle served
// from its host and every host's apt pointed at it, as init does first.
func NewBundleServe(inv *inventory.Inventory, binary string) Flow {
	return Flow{
		Name:     "gpukit bundle serve",
		Machines: inv.Machines,
		Phases: append([]engine.Phase{
			preflight.New(inv).Facts(), // preflight/facts  probe each host in one round trip
		}, bundlePhases(inv, binary)...),
	}
}

// bundlePhases serve spec.bundle (none without one), before anything is
// installed: every later phase installs from it.
func bundlePhases(inv *inventory.Inventory, binary string) []engine.Phase {
	if inv.Cluster.Spec.Bundle == nil {
		return nil
	}
	b := bundlehost.New(inv, binary)
	return []engine.Phase{
		b.Serve(),   // bundle/serve    the bundle host: the files it lacks, gpukit, the registry's certificate, gpukit-bundle.service
		b.Sources(), // bundle/sources  every apt host: the bundle's repository of its distribution, its key trusted for it only
	}
}

// bundleSources is bundle/sources alone (none without spec.bundle): for
// hosts added to a cluster whose bundle host serves already.
func bundleSources(inv *inventory.Inventory) []engine.Phase {
	if inv.Cluster.Spec.Bundle == nil {
		return nil
	}
	return []engine.Phase{bundlehost.New(inv, "").Sources()}
}
