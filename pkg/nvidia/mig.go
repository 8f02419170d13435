package nvidia

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/gpukit/gpukit/manifests"
	"github.com/gpukit/gpukit/pkg/compat"
	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/facts"
	"github.com/gpukit/gpukit/pkg/mig"
	"github.com/gpukit/gpukit/pkg/scripts"
)

// PhaseMIG partitions the GPUs as the host's MIG layout says.
const PhaseMIG = "nvidia/mig"

// MIG returns the phase that applies each host's MIG layout and installs
// the boot unit that applies it again after every reboot.
func (l *Layer) MIG() engine.Phase { return &migPhase{l} }

type migPhase struct{ l *Layer }

func (*migPhase) Name() string    { return PhaseMIG }
func (*migPhase) HostLocal() bool { return true }
func (*migPhase) Title() string   { return "Partition the GPUs (MIG layout)" }

// migPlan is what the phase does on a host: the command, and why.
type migPlan struct {
	cmd  scripts.MIGInstallParams
	why  []string
	skip string
}

// decide reads the host's GPUs afresh and compares them, and the installed
// script, with its layout. A layout the GPUs cannot hold is an error, in
// plan too.
func (p *migPhase) decide(ctx context.Context, h *engine.Host) (migPlan, error) {
	w, s, why, err := p.l.begin(ctx, h)
	if err != nil || why != "" {
		return migPlan{skip: why}, err
	}
	pf, err := p.l.facts(ctx, h)
	if err != nil {
		return migPlan{}, err
	}
	// The GPUs as nvidia-smi sees them now, their PCI ids (a layout may
	// pick GPUs by model) from the probe.
	f := &facts.Facts{GPUs: s.SMI, MIG: s.MIG, PCIGPUs: pf.PCIGPUs}
	if len(s.SMI) == 0 {
		// No driver yet (a plan of a fresh host): the GPUs on the PCI bus,
		// as the bill knows their models.
		f.GPUs = pciGPUs(pf.PCIGPUs)
	}
	branch := 0
	if v, err := compat.ParseDriver(w.Driver); err == nil {
		branch = v.Branch
	}
	hw, ok, err := mig.Resolve(&p.l.inv.Cluster.Spec, h.Machine, f, branch)
	if err != nil {
		return migPlan{}, err
	}
	if !ok || len(hw.GPUs) == 0 {
		if s.MIGScript != "" || s.MIGUnit != "" {
			return migPlan{why: []string{"no MIG layout: the boot unit goes"}}, nil
		}
		if len(hw.Skipped) > 0 {
			return migPlan{skip: "MIG layout " + hw.Layout + " leaves every GPU alone: " + strings.Join(hw.Skipped, "; ")}, nil
		}
		return migPlan{skip: "no MIG layout for this host (MIG left as it is)"}, nil
	}
	params := scripts.MIGParams{Units: scripts.GPUConsumerUnits}
	var plan migPlan
	for _, g := range hw.GPUs {
		params.GPUs = append(params.GPUs, scripts.MIGGPU{Index: g.Index, Enabled: g.Enabled, Profiles: g.Profiles, IDs: g.IDs})
		i := indexOf(f.GPUs, g.Index)
		if i < 0 {
			return migPlan{}, fmt.Errorf("MIG layout %s (%s): the host has no GPU %d", hw.Layout, hw.From, g.Index)
		}
		if d := mig.Differs(f.GPUs[i], g); d != "" {
			plan.why = append(plan.why, fmt.Sprintf("GPU %d: %s", g.Index, d))
		}
	}
	script, err := scripts.MIGScript(params)
	if err != nil {
		return migPlan{}, err
	}
	plan.cmd = scripts.MIGInstallParams{Script: script, Unit: scripts.MIGUnit}
	sum := sha256.Sum256([]byte(script + "\n")) // put writes a newline after it
	switch {
	case s.MIGScript != hex.EncodeToString(sum[:]):
		plan.why = append(plan.why, "the boot unit's script is not layout "+hw.Layout+"'s")
	case s.MIGUnit != "enabled":
		plan.why = append(plan.why, "the boot unit is not enabled")
	}
	if len(plan.why) == 0 {
		plan.skip = "the GPUs hold MIG layout " + hw.Layout + " (" + hw.From + ")"
	}
	return plan, nil
}

func indexOf(gpus []facts.GPU, index int) int {
	for i, g := range gpus {
		if g.Index == index {
			return i
		}
	}
	return -1
}

// pciGPUs are GPUs as the PCI bus shows them, numbered in bus order as
// nvidia-smi will: a model the bill's MIG table knows by its device id has
// MIG (off, as a fresh GPU has it).
func pciGPUs(devs []facts.PCIDevice) []facts.GPU {
	var out []facts.GPU
	for i, d := range devs {
		g := facts.GPU{Index: i, Name: "PCI device " + d.DeviceID, BusID: d.Address}
		if m, ok := manifests.Bill().MIGGPU("", d.DeviceID); ok {
			g.Name, g.MIGMode, g.MIGPending = "NVIDIA "+m.Names[0], "Disabled", "Disabled"
		}
		out = append(out, g)
	}
	return out
}

func (p *migPhase) ShouldRun(ctx context.Context, h *engine.Host) (bool, string, error) {
	plan, err := p.decide(ctx, h)
	if err != nil {
		return false, "", err
	}
	if plan.skip != "" {
		return false, plan.skip, nil
	}
	return true, "", nil
}

func (p *migPhase) Run(ctx context.Context, h *engine.Host) error {
	plan, err := p.decide(ctx, h)
	if err != nil || plan.skip != "" {
		return err
	}
	for _, why := range plan.why {
		h.Logf("%s: %s", PhaseMIG, why)
	}
	cmd, err := scripts.MIGInstall(plan.cmd)
	if err := p.l.apply(ctx, h, "partition the GPUs", cmd, err); err != nil || h.DryRun() {
		return err
	}
	// The MIG devices become the host's facts: the swarm advertises them.
	s, err := p.l.state(ctx, h)
	if err != nil {
		return err
	}
	if h.Facts != nil {
		f := *h.Facts
		f.GPUs, f.MIG = s.SMI, s.MIG
		h.Facts = &f
	}
	return nil
}
