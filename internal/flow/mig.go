package flow

import (
	"errors"
	"fmt"

	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/mig"
	"github.com/gpukit/gpukit/pkg/upgrade"
)

// NewMIGApply is `gpukit mig apply`: each GPU node's MIG layout (the
// inventory's spec.nvidia.mig and hosts' mig) applied on a running cluster
// through the driver upgrade's rollout: the same waves, budget, canary,
// training safety, cordon and drain, state and resume. The MIG phase is the
// change; nvidia-smi verifies; the device plugin is restarted and the node
// waited for until Ready (what it advertises changes with its layout), then
// uncordoned. No etcd snapshot: the cluster's state does not change.
func NewMIGApply(inv *inventory.Inventory, o UpgradeOptions) (*UpgradeDriver, error) {
	gpu := nvidiaLayer(inv, o.NVIDIA)
	change := []engine.Phase{gpu.MIG()}    // nvidia/mig     the layout, and its boot unit
	verify := []engine.Phase{gpu.Verify()} // nvidia/verify  nvidia-smi: every GPU, the versions
	o.Upgrade.SkipEtcdSnapshot, o.Upgrade.ReadyOnly = true, true
	o.Upgrade.What, o.Upgrade.Converged = "MIG layout", "the GPUs hold their MIG layout"
	return newRollout("gpukit mig apply", inv, o, change, verify)
}

// DecideMIG reads the inventory file and decides a MIG rollout: the
// unfinished one recorded at statePath (default: the cluster's
// <name>.mig.json) to resume, which must apply the same layouts, or a new
// one. Refusals are *InputErrors; nothing is written.
func DecideMIG(file, statePath string, resume, dryRun bool) (*UpgradeRollout, error) {
	data, err := inventory.ReadFile(file)
	if err != nil {
		return nil, badInput(err)
	}
	inv, err := inventory.LoadFile(file, data, inventory.Overrides{})
	if err != nil {
		return nil, badInput(err)
	}
	r := &UpgradeRollout{File: file, Data: data, statePath: statePath, dryRun: dryRun, kind: "mig", migDigest: mig.Digest(inv)}
	if dryRun {
		return r, nil
	}
	if r.statePath == "" {
		r.statePath = upgrade.StatePath(inv.Cluster.Metadata.Name, "mig")
	}
	st, _, err := upgrade.Decide(r.statePath, resume, upgrade.Target{MIG: r.migDigest})
	var re *upgrade.ResumeError
	switch {
	case errors.As(err, &re) && re.Field == "mig":
		return nil, badInput(fmt.Errorf("--resume: the rollout being resumed applies the MIG layouts %s; the inventory's are %s now: resume with the inventory it started with, or remove %s to start a new one", re.Have, re.Want, r.statePath))
	case errors.As(err, &re) && re.Field != "":
		return nil, badInput(fmt.Errorf("%s is a driver rollout's state, not a MIG rollout's", r.statePath))
	case err != nil:
		return nil, badInput(fmt.Errorf("--resume: %w", err))
	}
	r.state = st
	return r, nil
}
