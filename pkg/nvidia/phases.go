package nvidia

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/facts"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/osfamily"
	"github.com/gpukit/gpukit/pkg/scripts"
)

// ---- nvidia/prepare

type preparePhase struct{ l *Layer }

func (*preparePhase) Name() string    { return PhasePrepare }
func (*preparePhase) HostLocal() bool { return true }
func (*preparePhase) Title() string   { return "Prepare for the NVIDIA driver" }

func (p *preparePhase) ShouldRun(ctx context.Context, h *engine.Host) (bool, string, error) {
	w, s, skip, err := p.l.begin(ctx, h)
	if err != nil || skip != "" {
		return false, skip, err
	}
	var todo []string
	if w.DKMS && !s.Headers {
		todo = append(todo, "headers for kernel "+s.Kernel)
	}
	if _, ok := s.Packages["dkms"]; w.DKMS && !ok {
		todo = append(todo, "DKMS")
	}
	if !s.NouveauBlacklisted {
		todo = append(todo, "nouveau blacklist")
	}
	if s.NouveauLoaded && !slices.Contains(s.RebootRequired, "gpukit") {
		todo = append(todo, "reboot to unload nouveau")
	}
	if len(todo) == 0 {
		return false, "kernel headers, DKMS and the nouveau blacklist in place", nil
	}
	h.Logf("nvidia/prepare: to do: %s", strings.Join(todo, ", "))
	return true, "", nil
}

func (p *preparePhase) Run(ctx context.Context, h *engine.Host) error {
	w, err := p.l.want(ctx, h)
	if err != nil {
		return err
	}
	cmd, err := scripts.NVIDIAPrepare(scripts.NVIDIAPrepareParams{Family: w.Family, Headers: w.DKMS})
	return p.l.apply(ctx, h, "headers, DKMS and nouveau", cmd, err)
}

// ---- nvidia/driver

type driverPhase struct{ l *Layer }

func (*driverPhase) Name() string    { return PhaseDriver }
func (*driverPhase) HostLocal() bool { return true }
func (*driverPhase) Title() string   { return "Install the NVIDIA driver" }

func (p *driverPhase) ShouldRun(ctx context.Context, h *engine.Host) (bool, string, error) {
	w, s, skip, err := p.l.begin(ctx, h)
	if err != nil || skip != "" {
		return false, skip, err
	}
	if why := driverPending(w, s); why != "" {
		h.Logf("nvidia/driver: %s", why)
		return true, "", nil
	}
	return false, fmt.Sprintf("driver %s installed and held", s.InstalledDriver()), nil
}

// driverPending says what is missing for the driver to be as wanted, or ""
// when it is: every package at the wanted version and held, unattended
// upgrades kept away (apt).
func driverPending(w Want, s *State) string {
	for _, name := range w.Packages {
		pkg, ok := s.Packages[name]
		switch {
		case !ok:
			return name + " is not installed"
		case !versionMatches(Upstream(pkg.Version), w.Driver):
			return fmt.Sprintf("%s is %s, not %s", name, pkg.Version, w.Driver)
		case !pkg.Held:
			return name + " is not held"
		}
	}
	if w.Family.PackageManager == osfamily.Apt && !s.UnattendedBlacklist {
		return "unattended-upgrades is not kept away from the driver"
	}
	return ""
}

func (p *driverPhase) Run(ctx context.Context, h *engine.Host) error {
	w, err := p.l.want(ctx, h)
	if err != nil {
		return err
	}
	repo, err := scripts.NVIDIARepo(w.Repo)
	if err := p.l.apply(ctx, h, "package source", repo, err); err != nil {
		return err
	}
	drv, err := scripts.NVIDIADriver(scripts.NVIDIADriverParams{Family: w.Family, Version: w.Driver, Packages: w.Packages, Stream: w.Stream})
	return p.l.apply(ctx, h, "driver "+describeVersion(w), drv, err)
}

// ---- nvidia/fabricmanager

type fabricManagerPhase struct{ l *Layer }

func (*fabricManagerPhase) Name() string    { return PhaseFabricManager }
func (*fabricManagerPhase) HostLocal() bool { return true }
func (*fabricManagerPhase) Title() string {
	return "Install the NVIDIA fabric manager (NVSwitch systems)"
}

func (p *fabricManagerPhase) ShouldRun(ctx context.Context, h *engine.Host) (bool, string, error) {
	w, s, skip, err := p.l.begin(ctx, h)
	if err != nil || skip != "" {
		return false, skip, err
	}
	if !w.NeedsFabricManager(p.l.inv.Cluster.Spec.NVIDIA.FabricManager, s) {
		return false, "no NVSwitch on this host", nil
	}
	release := releaseFor(w, s)
	name := w.FabricManagerPackage(release)
	pkg, ok := s.Packages[name]
	if ok && Upstream(pkg.Version) == release && pkg.Held && s.Services["nvidia-fabricmanager"].Enabled == "enabled" {
		return false, fmt.Sprintf("%s %s installed, held and enabled", name, release), nil
	}
	return true, "", nil
}

// releaseFor is the driver release the fabric manager must match: the one
// installed, or, before it is (dry-run), the one asked for.
func releaseFor(w Want, s *State) string {
	if r := s.InstalledDriver(); r != "" && versionMatches(r, w.Driver) {
		return r
	}
	return w.Driver
}

func (p *fabricManagerPhase) Run(ctx context.Context, h *engine.Host) error {
	w, s, _, err := p.l.begin(ctx, h)
	if err != nil {
		return err
	}
	release := releaseFor(w, s)
	cmd, err := scripts.FabricManager(scripts.FabricManagerParams{Family: w.Family, Package: w.FabricManagerPackage(release), Version: release})
	return p.l.apply(ctx, h, "fabric manager "+release, cmd, err)
}

// ---- nvidia/persistenced

type persistencedPhase struct{ l *Layer }

func (*persistencedPhase) Name() string    { return PhasePersistenced }
func (*persistencedPhase) HostLocal() bool { return true }
func (*persistencedPhase) Title() string   { return "Enable persistence mode" }

func (p *persistencedPhase) ShouldRun(ctx context.Context, h *engine.Host) (bool, string, error) {
	_, s, skip, err := p.l.begin(ctx, h)
	if err != nil || skip != "" {
		return false, skip, err
	}
	svc := s.Services["nvidia-persistenced"]
	pkg, installed := s.Packages["nvidia-persistenced"]
	// A daemon left at another release than the driver's refuses to start
	// with the new module; one that runs is fine whatever its version (the
	// distributions package it separately).
	follows := installed && (Upstream(pkg.Version) == s.InstalledDriver() || svc.Active == "active")
	if s.PersistencedDropIn && svc.Enabled == "enabled" && follows && pkg.Held {
		return false, "nvidia-persistenced enabled in persistence mode", nil
	}
	return true, "", nil
}

func (p *persistencedPhase) Run(ctx context.Context, h *engine.Host) error {
	w, err := p.l.want(ctx, h)
	if err != nil {
		return err
	}
	cmd, err := scripts.Persistenced(scripts.PersistencedParams{Family: w.Family})
	return p.l.apply(ctx, h, "nvidia-persistenced", cmd, err)
}

// ---- nvidia/cuda

type cudaPhase struct{ l *Layer }

func (*cudaPhase) Name() string    { return PhaseCUDA }
func (*cudaPhase) HostLocal() bool { return true }
func (*cudaPhase) Title() string   { return "Install the CUDA toolkit" }

func (p *cudaPhase) ShouldRun(ctx context.Context, h *engine.Host) (bool, string, error) {
	w, s, skip, err := p.l.begin(ctx, h)
	if err != nil || skip != "" {
		return false, skip, err
	}
	if w.CUDA == "" {
		return false, "the inventory asks for no CUDA toolkit on this host", nil
	}
	// Checked against the driver that is there (or will be, in dry-run)
	// before anything is installed.
	if err := w.CheckCUDA(releaseFor(w, s)); err != nil {
		return false, "", err
	}
	pkg := "cuda-toolkit-" + strings.ReplaceAll(w.CUDA, ".", "-")
	if _, ok := s.Packages[pkg]; ok {
		return false, pkg + " installed", nil
	}
	return true, "", nil
}

func (p *cudaPhase) Run(ctx context.Context, h *engine.Host) error {
	w, err := p.l.want(ctx, h)
	if err != nil {
		return err
	}
	cmd, err := scripts.CUDAToolkit(scripts.CUDAToolkitParams{Family: w.Family, CUDA: w.CUDA})
	return p.l.apply(ctx, h, "CUDA toolkit "+w.CUDA, cmd, err)
}

// ---- nvidia/container-toolkit

type containerToolkitPhase struct{ l *Layer }

func (*containerToolkitPhase) Name() string    { return PhaseContainerToolkit }
func (*containerToolkitPhase) HostLocal() bool { return true }
func (*containerToolkitPhase) Title() string   { return "Install the NVIDIA Container Toolkit" }

func (p *containerToolkitPhase) ShouldRun(ctx context.Context, h *engine.Host) (bool, string, error) {
	w, s, skip, err := p.l.begin(ctx, h)
	if err != nil || skip != "" {
		return false, skip, err
	}
	v := w.ContainerToolkit.Version
	for _, name := range scripts.ContainerToolkitPackages {
		pkg, ok := s.Packages[name]
		if !ok || Upstream(pkg.Version) != v || !pkg.Held {
			return true, "", nil
		}
	}
	for _, r := range w.ContainerToolkit.Runtimes {
		if hasRuntime(h, r.Binary) && !slices.Contains(s.RuntimeNVIDIA, r.Name) {
			return true, "", nil
		}
	}
	return false, "container toolkit " + v + " installed and held", nil
}

// hasRuntime reports whether the facts list the runtime's binary.
func hasRuntime(h *engine.Host, binary string) bool {
	if h.Facts == nil {
		return false
	}
	for _, r := range h.Facts.Runtimes {
		if r == binary || strings.HasPrefix(r, binary+" ") {
			return true
		}
	}
	return false
}

func (p *containerToolkitPhase) Run(ctx context.Context, h *engine.Host) error {
	w, err := p.l.want(ctx, h)
	if err != nil {
		return err
	}
	cmd, err := scripts.ContainerToolkit(w.ContainerToolkit)
	return p.l.apply(ctx, h, "container toolkit "+w.ContainerToolkit.Version, cmd, err)
}

// ---- nvidia/reboot

type rebootPhase struct{ l *Layer }

func (*rebootPhase) Name() string    { return PhaseReboot }
func (*rebootPhase) HostLocal() bool { return true }
func (*rebootPhase) Title() string {
	return "Load the new driver: its kernel modules swapped, else a reboot"
}

// MaxParallel bounds the hosts down at once.
func (p *rebootPhase) MaxParallel() int { return p.l.opts.MaxParallelReboots }

func (p *rebootPhase) ShouldRun(ctx context.Context, h *engine.Host) (bool, string, error) {
	_, s, skip, err := p.l.begin(ctx, h)
	if err != nil || skip != "" {
		return false, skip, err
	}
	if why := s.NeedsReboot(); why != "" {
		h.Logf("nvidia/reboot: %s", why)
		return true, "", nil
	}
	if h.DryRun() && h.Changed() {
		// The planned changes did not happen: whether they need a reboot
		// is known only when they have.
		return true, "", nil
	}
	return false, "no reboot needed", nil
}

func (p *rebootPhase) Run(ctx context.Context, h *engine.Host) error {
	s, err := p.l.state(ctx, h)
	if err != nil {
		return err
	}
	if swapped, err := p.swap(ctx, h, s); swapped || err != nil {
		return err
	}
	cmd, err := scripts.Reboot()
	if err := p.l.apply(ctx, h, "reboot", cmd, err); err != nil {
		return err
	}
	before := s.BootID
	return h.Reconnect(ctx, "wait for the host to come back", p.l.rebootTimeout(), func(ctx context.Context) (bool, error) {
		now, err := p.l.state(ctx, h)
		if err != nil {
			return false, err
		}
		if now.BootID == before {
			p.l.changed(h) // not down yet: read again on the next attempt
			return false, nil
		}
		// SSH answers before the boot is over: wait for the units that
		// start after it (persistence daemon, fabric manager).
		wait, err := scripts.WaitBoot(scripts.WaitBootParams{TimeoutSeconds: bootSettle})
		if err != nil {
			return false, err
		}
		if _, err := h.Run(ctx, "wait for the boot to finish", wait); err != nil {
			return false, err
		}
		p.l.changed(h)
		return true, nil
	})
}

// swap tries to bring the installed driver into memory without a reboot:
// true when it is there. A refusal (the policy, nouveau, a module in use)
// is logged with its reason and the host reboots instead; a step that
// could not run at all (the connection) is the error.
func (p *rebootPhase) swap(ctx context.Context, h *engine.Host, s *State) (bool, error) {
	why := s.SwapBlocker()
	if p.l.inv.Cluster.Spec.NVIDIA.RebootPolicy == inventory.RebootAlways {
		why = "spec.nvidia.rebootPolicy is always"
	}
	installed := s.InstalledDriver()
	if h.DryRun() {
		w, err := p.l.want(ctx, h)
		if err != nil {
			return false, err
		}
		installed = w.Driver // what the planned install leaves on disk
	}
	if why == "" && !strings.Contains(installed, ".") {
		why = fmt.Sprintf("the release on disk is not known (%q)", installed)
	}
	if why != "" {
		h.Logf("nvidia/reboot: rebooting, not swapping the modules: %s", why)
		return false, nil
	}
	cmd, err := scripts.ModuleSwap(scripts.ModuleSwapParams{Driver: installed, Units: scripts.GPUConsumerUnits})
	if err != nil {
		return false, err
	}
	res, err := h.Apply(ctx, "swap the kernel modules for driver "+installed, cmd)
	p.l.changed(h)
	switch {
	case h.DryRun():
		return true, nil
	case err != nil && res.ExitCode <= 0:
		return false, err
	case err != nil:
		why, ok := scripts.Said(res.Stderr, scripts.NotSwappedPrefix)
		if !ok {
			why = fmt.Sprintf("exit status %d", res.ExitCode)
		}
		h.Logf("nvidia/reboot: the modules were not swapped (%s): rebooting", why)
		return false, nil
	}
	now, err := p.l.state(ctx, h)
	if err != nil {
		return false, err
	}
	if why := now.NeedsReboot(); why != "" {
		h.Logf("nvidia/reboot: after the swap %s: rebooting", why)
		return false, nil
	}
	return true, nil
}

// bootSettle bounds the wait for a booted host's units, in seconds.
const bootSettle = 300

// health reads nvidia-smi's full report and returns the failing GPUs'
// reasons (uncorrectable ECC errors, a failed row remap, a fabric that did
// not come up); warnings go to the host's log.
func (p *verifyPhase) health(ctx context.Context, h *engine.Host) []string {
	cmd, err := scripts.NVIDIAHealth()
	if err != nil {
		return []string{err.Error()}
	}
	res, err := h.Run(ctx, "read the GPUs' health", cmd)
	if err != nil {
		return []string{"nvidia-smi -q: " + err.Error()}
	}
	q, err := facts.ParseSMIQuery(res.Stdout)
	if err != nil {
		h.Logf("nvidia/verify: the GPUs' report could not be read (%v); health not checked", err)
		return nil
	}
	var out []string
	for _, g := range q.Health() {
		for _, r := range g.Reasons() {
			h.Logf("nvidia/verify: GPU %s: %s", g.BusID, r)
		}
		for _, r := range g.Fails {
			out = append(out, fmt.Sprintf("GPU %s: %s", g.BusID, r))
		}
	}
	return out
}

// ---- nvidia/verify

type verifyPhase struct{ l *Layer }

func (*verifyPhase) Name() string    { return PhaseVerify }
func (*verifyPhase) HostLocal() bool { return true }
func (*verifyPhase) Title() string   { return "Verify the GPUs and the driver" }

// A host that fails verification is named and the others go on.
func (p *verifyPhase) ShouldRun(ctx context.Context, h *engine.Host) (bool, string, error) {
	w, err := p.l.want(ctx, h)
	if err != nil {
		return false, "", err
	}
	if !w.GPU {
		return false, "no NVIDIA GPU on this host", nil
	}
	if h.DryRun() && h.Changed() {
		return false, "dry-run: verified once the planned changes are made", nil
	}
	return true, "", nil
}

func (p *verifyPhase) Run(ctx context.Context, h *engine.Host) error {
	w, err := p.l.want(ctx, h)
	if err != nil {
		return err
	}
	p.l.changed(h) // read afresh: the last change may be a reboot
	s, err := p.l.state(ctx, h)
	if err != nil {
		return err
	}
	f, err := p.l.facts(ctx, h) // the PCI bus: a reboot does not change it
	if err != nil {
		return err
	}
	var problems []string
	switch {
	case s.SMIError != "":
		problems = append(problems, "nvidia-smi: "+s.SMIError)
	case len(s.SMI) != len(f.PCIGPUs) && len(f.PCIGPUs) > 0:
		problems = append(problems, fmt.Sprintf("nvidia-smi sees %d GPUs, the PCI bus has %d: a GPU is not usable", len(s.SMI), len(f.PCIGPUs)))
	}
	for _, g := range s.SMI {
		if !versionMatches(g.Driver, w.Driver) {
			problems = append(problems, fmt.Sprintf("GPU %d runs driver %s, not %s", g.Index, g.Driver, w.Driver))
		}
		if !strings.EqualFold(g.Persistence, "Enabled") {
			problems = append(problems, fmt.Sprintf("GPU %d has persistence mode %s", g.Index, g.Persistence))
		}
	}
	if why := s.NeedsReboot(); why != "" {
		problems = append(problems, "still needs a reboot: "+why)
	}
	if len(problems) == 0 {
		problems = append(problems, p.health(ctx, h)...)
	}
	if len(problems) > 0 {
		return fmt.Errorf("not verified: %s", strings.Join(problems, "; "))
	}
	// The verified GPUs become the host's facts.
	verified := *f
	verified.GPUs, verified.NvidiaSMIError, verified.NvidiaSMI, verified.LoadedDriver = s.SMI, "", true, s.ModuleLoaded
	h.Facts = &verified
	h.Logf("nvidia/verify: %d GPUs, driver %s, persistence mode on", len(s.SMI), s.InstalledDriver())
	return nil
}
