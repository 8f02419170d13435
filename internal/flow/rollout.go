package flow

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/gpukit/gpukit/pkg/atomicfile"
	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/upgrade"
)

// UpgradeRollout is a run of `gpukit upgrade driver` around its flow: the
// rollout it starts or resumes, decided before any host is reached, and
// what it leaves recorded on this machine. DecideUpgrade, then Start, run
// the flow, then Finish.
type UpgradeRollout struct {
	// File is the inventory file and Data its bytes, read once: they give
	// the cluster's name (the state's default path) before the versions
	// apply, the versions the run installs and --write-inventory's check.
	File string
	Data []byte
	// Versions are what the run installs: the command line's, and a
	// resumed rollout's where it gave none.
	Versions inventory.Overrides

	statePath      string
	dryRun         bool
	writeInventory bool
	// state is the rollout's record: the one resumed, or the new one
	// Start made; nil in a dry-run.
	state  *upgrade.State
	inv    *inventory.Inventory
	driver *UpgradeDriver
	// kind is "mig" for `gpukit mig apply` (DecideMIG), whose target is
	// migDigest; "" is the driver's.
	kind, migDigest string
}

// DecideUpgrade reads the inventory file and decides the rollout
// (upgrade.Decide): the unfinished one recorded at statePath to resume, or
// a new one. statePath defaults to the cluster's (upgrade.DefaultStatePath,
// named by the file as written); a dry-run reads no state. Every refusal is
// an *InputError, and nothing is written.
func DecideUpgrade(file, statePath string, resume, dryRun bool, versions inventory.Overrides) (*UpgradeRollout, error) {
	data, err := inventory.ReadFile(file)
	if err != nil {
		return nil, badInput(err)
	}
	r := &UpgradeRollout{File: file, Data: data, Versions: versions, statePath: statePath, dryRun: dryRun}
	if dryRun {
		return r, nil
	}
	if r.statePath == "" {
		// The default path needs the cluster's name: the inventory as
		// written, without the versions (a resumed rollout supplies those
		// the command line left out).
		inv, err := inventory.LoadFile(file, data, inventory.Overrides{})
		if err != nil {
			return nil, badInput(err)
		}
		r.statePath = upgrade.DefaultStatePath(inv.Cluster.Metadata.Name)
	}
	v := &r.Versions
	flags := map[string]*inventory.Override{"driver": &v.NvidiaDriver, "cuda": &v.CUDA, "toolkit": &v.ContainerToolkit}
	want := upgrade.Target{Driver: v.NvidiaDriver.Value, CUDA: v.CUDA.Value, Toolkit: v.ContainerToolkit.Value}
	st, got, err := upgrade.Decide(r.statePath, resume, want)
	var re *upgrade.ResumeError
	switch {
	case errors.As(err, &re) && re.Field != "":
		return nil, badInput(fmt.Errorf("--resume %s %s: the rollout being resumed installs %q; give the same, or none", flags[re.Field].Flag, re.Want, re.Have))
	case errors.As(err, &re) && resume:
		return nil, badInput(fmt.Errorf("--resume: %w", err))
	case err != nil:
		return nil, badInput(err)
	}
	v.NvidiaDriver.Value, v.CUDA.Value, v.ContainerToolkit.Value = got.Driver, got.CUDA, got.Toolkit
	r.state = st
	return r, nil
}

// Start builds the rollout's flow for inv, the inventory with r.Versions
// applied; o.Upgrade.State becomes the rollout's. With writeInventory it
// first checks that the versions can be recorded in the file. A new
// rollout's state is saved only once the input is known good: bad input,
// an *InputError, leaves nothing behind.
func (r *UpgradeRollout) Start(inv *inventory.Inventory, o UpgradeOptions, writeInventory bool) (*UpgradeDriver, error) {
	r.inv, r.writeInventory = inv, writeInventory
	if writeInventory {
		// Before any host: an inventory the versions cannot be written to
		// is bad input, not a failure after the rollout.
		if _, err := inventory.SetVersions(r.Data, r.versions()); err != nil {
			return nil, badInput(fmt.Errorf("--write-inventory: %s: %w", r.File, err))
		}
	}
	fresh := r.state == nil && !r.dryRun
	if fresh {
		name := inv.Cluster.Metadata.Name
		target := upgrade.Target{Driver: inv.Cluster.Spec.Versions.NvidiaDriver, CUDA: r.Versions.CUDA.Value, Toolkit: r.Versions.ContainerToolkit.Value}
		switch r.kind {
		case "mig":
			target = upgrade.Target{MIG: r.migDigest}
		case "kubernetes":
			target = upgrade.Target{Kubernetes: inv.Cluster.Spec.Versions.Kubernetes}
		}
		r.state = upgrade.NewState(cmp.Or(r.statePath, upgrade.StatePath(name, cmp.Or(r.kind, "driver"))), name, r.File, target, time.Now())
	}
	o.Upgrade.State = r.state
	build := NewUpgradeDriver
	switch r.kind {
	case "mig":
		build = NewMIGApply
	case "kubernetes":
		build = NewUpgradeKubernetes
	}
	f, err := build(inv, o)
	if err != nil {
		return nil, badInput(err)
	}
	if fresh {
		if err := r.state.Save(); err != nil {
			return nil, badInput(fmt.Errorf("rollout state %s: %w", r.state.Path(), err))
		}
	}
	r.driver = f
	return f, nil
}

// Finish is how far the started rollout got (UpgradeDriver.Result), with
// its state file and what spec.versions should say now. A complete
// rollout is recorded: its state finished and, with writeInventory, the
// versions written into the inventory file.
func (r *UpgradeRollout) Finish(sum *engine.Summary) (*UpgradeResult, error) {
	res := r.driver.Result(sum, r.dryRun)
	values := r.versions()
	for _, k := range []string{"nvidiaDriver", "cuda", "containerToolkit", "kubernetes"} {
		if values[k] != "" && r.kind != "mig" {
			res.Record = append(res.Record, "spec.versions."+k+": "+values[k])
		}
	}
	if r.state != nil {
		res.State = r.state.Path()
	}
	if !res.Complete || r.dryRun {
		return res, nil
	}
	if r.state != nil {
		if err := r.state.Finish(time.Now()); err != nil {
			return nil, fmt.Errorf("rollout state: %w", err)
		}
	}
	if r.writeInventory {
		// Read again, not r.Data: a rollout takes hours, and an edit made
		// to the file meanwhile must not be lost to the write.
		data, err := os.ReadFile(r.File)
		if err == nil {
			data, err = inventory.SetVersions(data, values)
		}
		var fi os.FileInfo
		if err == nil {
			fi, err = os.Stat(r.File)
		}
		if err == nil {
			err = atomicfile.Write(r.File, data, fi.Mode().Perm())
		}
		if err != nil {
			return nil, fmt.Errorf("--write-inventory: %w", err)
		}
		res.Written = r.File
	}
	return res, nil
}

// versions are what the rollout installs, as spec.versions names them.
func (r *UpgradeRollout) versions() map[string]string {
	if r.kind == "kubernetes" {
		return map[string]string{"kubernetes": r.inv.Cluster.Spec.Versions.Kubernetes}
	}
	return map[string]string{"nvidiaDriver": r.inv.Cluster.Spec.Versions.NvidiaDriver, "cuda": r.Versions.CUDA.Value, "containerToolkit": r.Versions.ContainerToolkit.Value}
}
