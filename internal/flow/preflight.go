package flow

import (
	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/preflight"
)

// Preflight is `gpukit preflight`: it checks that every host is ready and
// changes nothing. Connecting comes first in every flow (the engine's
// "connect" phase).
type Preflight struct {
	Flow
	checks *preflight.Preflight
}

// NewPreflight builds the flow for the named hosts of inv (none: every
// host); the cluster-wide checks compare the hosts checked.
func NewPreflight(inv *inventory.Inventory, names []string) (*Preflight, error) {
	p := newPreflight(inv)
	if len(names) > 0 {
		m, err := named(inv, names, "")
		if err != nil {
			return nil, err
		}
		p.Machines = m
	}
	return p, nil
}

// newPreflight is preflight of every host of inv, which init and add-node
// build on.
func newPreflight(inv *inventory.Inventory) *Preflight {
	checks := preflight.New(inv)
	return &Preflight{
		checks: checks,
		Flow: Flow{
			Name:     "gpukit preflight",
			Machines: inv.Machines,
			Phases:   preflightPhases(checks),
		},
	}
}

// preflightPhases is preflight's part of any flow that builds on hosts: a
// failed check stops the run before anything is installed.
func preflightPhases(checks *preflight.Preflight) []engine.Phase {
	return []engine.Phase{
		checks.Facts(),         // preflight/facts    probe each host in one round trip
		checks.HostChecks(),    // preflight/checks   OS, hardware, GPUs, Secure Boot, runtimes, ports
		checks.ClusterChecks(), // preflight/cluster  unique hostnames, product_uuid, machine-id
	}
}

// Report is the preflight report of a finished run.
func (p *Preflight) Report(sum *engine.Summary) preflight.Report { return p.checks.Report(sum) }

// InitResult is the final object of init (add=false) or add-node
// (add=true), whose flows start with preflight's phases: the host counts,
// and whether preflight stopped the run.
func (p *Preflight) InitResult(sum *engine.Summary, add, dryRun bool) *InitResult {
	res := NewInitResult(add, dryRun)
	res.Hosts, res.Stopped = sum.HostCounts(), p.Stopped(sum)
	return res
}

// Stopped reports whether a host of a finished run failed in a preflight
// phase: the run stopped before anything was installed.
func (p *Preflight) Stopped(sum *engine.Summary) bool {
	for _, h := range sum.Failed() {
		switch h.Phase {
		case preflight.PhaseFacts, preflight.PhaseChecks, preflight.PhaseCluster:
			return true
		}
	}
	return false
}
