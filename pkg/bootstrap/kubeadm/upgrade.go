package kubeadm

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/gpukit/gpukit/manifests"
	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/osfamily"
	"github.com/gpukit/gpukit/pkg/scripts"
)

// The phases of gpukit upgrade kubernetes that the layer owns: the check
// and plan before the rollout, and what changes each node in it.
const (
	PhaseUpgradePlan    = "kubernetes/upgrade-plan"
	PhaseUpgradeKubeadm = "kubernetes/upgrade-kubeadm"
	PhaseUpgradeNode    = "kubernetes/upgrade-node"
	PhaseUpgradeKubelet = "kubernetes/upgrade-kubelet"
	upgradeLog          = logDir + "/kubeadm-upgrade.log"
)

// UpgradePlan is kubernetes/upgrade-plan, on the first control plane before
// any node changes: the API server's version read and the upgrade refused
// when it would skip a minor or go back; kubeadm of the new release
// installed there and its `kubeadm upgrade plan` shown.
func (l *Layer) UpgradePlan() engine.Phase { return &upgradePlanPhase{l} }

// UpgradeKubeadm is kubernetes/upgrade-kubeadm: kubeadm of the new release,
// from its minor's repository, unheld, installed, held.
func (l *Layer) UpgradeKubeadm() engine.Phase { return &upgradeKubeadmPhase{l} }

// UpgradeNode is kubernetes/upgrade-node: kubeadm upgrade apply on the
// first control plane, kubeadm upgrade node on every other node.
func (l *Layer) UpgradeNode() engine.Phase { return &upgradeNodePhase{l} }

// UpgradeKubelet is kubernetes/upgrade-kubelet: kubelet and kubectl of the
// new release unheld, installed, held, and the kubelet restarted on it.
func (l *Layer) UpgradeKubelet() engine.Phase { return &upgradeKubeletPhase{l} }

// target is the release the cluster moves to: the inventory's (with
// --version applied), X.Y.Z.
func (l *Layer) target() string { return strings.TrimPrefix(l.cluster.Version, "v") }

// ---- kubernetes/upgrade-plan

type upgradePlanPhase struct{ l *Layer }

func (*upgradePlanPhase) Name() string { return PhaseUpgradePlan }
func (*upgradePlanPhase) Title() string {
	return "Check the cluster's version; kubeadm upgrade plan on the first control plane"
}
func (*upgradePlanPhase) StopRunOnFailure() bool { return true }

func (p *upgradePlanPhase) Targets(hosts []*engine.Host) []*engine.Host {
	return firstControlPlaneIn(p.l.inv, hosts)
}

func (p *upgradePlanPhase) Run(ctx context.Context, h *engine.Host) error {
	l, want := p.l, p.l.target()
	cmd, err := scripts.KubeUpgrade(scripts.KubeUpgradeParams{Step: scripts.UpgradeVersion})
	if err != nil {
		return err
	}
	res, err := h.Run(ctx, cmd.Name, cmd, engine.DataOutput())
	if err != nil {
		return fmt.Errorf("the cluster's version: %w", err)
	}
	var v struct {
		GitVersion string `json:"gitVersion"`
	}
	if err := json.Unmarshal(res.Stdout, &v); err != nil || v.GitVersion == "" {
		return fmt.Errorf("the API server's /version: %q", strings.TrimSpace(string(res.Stdout)))
	}
	have := strings.TrimPrefix(v.GitVersion, "v")
	if err := CheckUpgrade(have, want); err != nil {
		return err
	}
	if have == want {
		h.Logf("%s: the API server runs %s already", PhaseUpgradePlan, v.GitVersion)
		return nil
	}
	h.Logf("%s: the API server runs %s; the cluster moves to %s", PhaseUpgradePlan, v.GitVersion, want)
	// kubeadm plans only for its own release: the new one first, here.
	if err := (&upgradeKubeadmPhase{l}).converge(ctx, h); err != nil {
		return err
	}
	if h.DryRun() {
		h.Logf("%s: kubeadm upgrade plan v%s runs once kubeadm %s is installed", PhaseUpgradePlan, want, want)
		return nil
	}
	plan, err := scripts.KubeUpgrade(scripts.KubeUpgradeParams{Step: scripts.UpgradePlan, Version: "v" + want, IgnorePreflightErrors: l.cluster.IgnorePreflightErrors})
	if err != nil {
		return err
	}
	_, err = h.Run(ctx, plan.Name, plan)
	return err
}

// CheckUpgrade says why the cluster at have (X.Y.Z) cannot move to want:
// a minor skipped (kubeadm moves one minor at a time: the path is named)
// or a downgrade; nil when it can (or is there).
func CheckUpgrade(have, want string) error {
	hm, wm := minorOf(have), minorOf(want)
	switch {
	case compareReleases(want, have) < 0:
		return fmt.Errorf("the cluster runs Kubernetes %s: %s would be a downgrade, which kubeadm does not do", have, want)
	case wm > hm+1:
		var path []string
		for m := hm + 1; m <= wm; m++ {
			r := "1." + strconv.Itoa(m)
			if release, ok := releaseOfMinor(m); ok && m < wm {
				r = release
			} else if m == wm {
				r = want
			}
			path = append(path, r)
		}
		return fmt.Errorf("the cluster runs Kubernetes %s: %s skips a minor, and kubeadm moves one minor at a time: upgrade to %s in turn (gpukit upgrade kubernetes --version %s first)", have, want, strings.Join(path, ", then "), path[0])
	}
	return nil
}

// releaseOfMinor is the release of minor the bill of materials names
// (kubeadmImages).
func releaseOfMinor(minor int) (string, bool) {
	for _, k := range manifests.Bill().KubeadmImages {
		if k.Minor == minor {
			return k.Release, true
		}
	}
	return "", false
}

// compareReleases compares X.Y.Z releases numerically.
func compareReleases(a, b string) int {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := range max(len(pa), len(pb)) {
		var x, y int
		if i < len(pa) {
			x, _ = strconv.Atoi(pa[i])
		}
		if i < len(pb) {
			y, _ = strconv.Atoi(pb[i])
		}
		if x != y {
			return x - y
		}
	}
	return 0
}

// ---- kubernetes/upgrade-kubeadm

type upgradeKubeadmPhase struct{ l *Layer }

func (*upgradeKubeadmPhase) Name() string    { return PhaseUpgradeKubeadm }
func (*upgradeKubeadmPhase) HostLocal() bool { return true }
func (*upgradeKubeadmPhase) Title() string {
	return "Install kubeadm of the new release from its minor's repository (unheld, installed, held)"
}

// pending says why kubeadm must move on h ("": it is there).
func (p *upgradeKubeadmPhase) pending(ctx context.Context, h *engine.Host) (scripts.KubePackagesParams, string, error) {
	pk, _, why, err := p.l.kubePackages(ctx, h, []string{"kubeadm"}, kubeExtra)
	return pk, why, err
}

func (p *upgradeKubeadmPhase) ShouldRun(ctx context.Context, h *engine.Host) (bool, string, error) {
	pk, why, err := p.pending(ctx, h)
	if err != nil || why != "" {
		return why != "", "", err
	}
	return false, "kubeadm " + pk.Version + " installed and held", nil
}

func (p *upgradeKubeadmPhase) Run(ctx context.Context, h *engine.Host) error {
	return p.converge(ctx, h)
}

func (p *upgradeKubeadmPhase) converge(ctx context.Context, h *engine.Host) error {
	pk, why, err := p.pending(ctx, h)
	if err != nil || why == "" {
		return err
	}
	h.Logf("%s: %s", PhaseUpgradeKubeadm, why)
	cmd, err := scripts.KubePackages(pk)
	_, err = p.l.apply(ctx, h, "install kubeadm "+pk.Version+" from "+pk.RepoURL, cmd, err)
	return err
}

// ---- kubernetes/upgrade-node

type upgradeNodePhase struct{ l *Layer }

func (*upgradeNodePhase) Name() string    { return PhaseUpgradeNode }
func (*upgradeNodePhase) HostLocal() bool { return true }
func (*upgradeNodePhase) Title() string {
	return "kubeadm upgrade apply on the first control plane, kubeadm upgrade node on the others"
}

// first says whether h is the first control plane: it applies the upgrade.
func (p *upgradeNodePhase) first(h *engine.Host) bool {
	m, ok := FirstControlPlane(p.l.inv)
	return ok && m.Name == h.Name()
}

func (p *upgradeNodePhase) ShouldRun(ctx context.Context, h *engine.Host) (bool, string, error) {
	s, err := p.l.state(ctx, h)
	if err != nil {
		return false, "", err
	}
	want := p.l.target()
	if h.Machine.HasRole(inventory.RoleControlPlane) || s.APIServer {
		tag := s.APIServerImage[strings.LastIndexByte(s.APIServerImage, ':')+1:]
		if tag == "v"+want {
			return false, "the control plane's static pods run v" + want, nil
		}
		h.Logf("%s: the API server's static pod runs %q, not v%s", PhaseUpgradeNode, tag, want)
		return true, "", nil
	}
	// A worker's kubelet moves last: at the new release, the node was
	// upgraded.
	if k, ok := s.Packages["kubelet"]; ok && osfamily.UpstreamMatches(k.Version, want) {
		return false, "the kubelet is at " + want + " already", nil
	}
	return true, "", nil
}

func (p *upgradeNodePhase) Run(ctx context.Context, h *engine.Host) error {
	par := scripts.KubeUpgradeParams{Step: scripts.UpgradeNode, LogFile: upgradeLog, IgnorePreflightErrors: p.l.cluster.IgnorePreflightErrors}
	if p.first(h) {
		par.Step, par.Version = scripts.UpgradeApply, "v"+p.l.target()
	}
	cmd, err := scripts.KubeUpgrade(par)
	_, err = p.l.apply(ctx, h, cmd.Name, cmd, err)
	return err
}

// ---- kubernetes/upgrade-kubelet

type upgradeKubeletPhase struct{ l *Layer }

func (*upgradeKubeletPhase) Name() string    { return PhaseUpgradeKubelet }
func (*upgradeKubeletPhase) HostLocal() bool { return true }
func (*upgradeKubeletPhase) Title() string {
	return "Install kubelet and kubectl of the new release (unheld, installed, held); restart the kubelet"
}

func (p *upgradeKubeletPhase) pending(ctx context.Context, h *engine.Host) (scripts.KubePackagesParams, string, error) {
	pk, s, why, err := p.l.kubePackages(ctx, h, []string{"kubelet", "kubectl"}, nil)
	if err == nil && why == "" && s.KubeletStale {
		why = "the kubelet runs the binary its upgrade replaced"
	}
	return pk, why, err
}

func (p *upgradeKubeletPhase) ShouldRun(ctx context.Context, h *engine.Host) (bool, string, error) {
	pk, why, err := p.pending(ctx, h)
	if err != nil || why != "" {
		if why != "" {
			h.Logf("%s: %s", PhaseUpgradeKubelet, why)
		}
		return why != "", "", err
	}
	return false, "kubelet and kubectl " + pk.Version + " installed, held and running", nil
}

func (p *upgradeKubeletPhase) Run(ctx context.Context, h *engine.Host) error {
	pk, _, err := p.pending(ctx, h)
	if err != nil {
		return err
	}
	cmd, err := scripts.KubePackages(pk)
	if _, err = p.l.apply(ctx, h, "install kubelet and kubectl "+pk.Version+" from "+pk.RepoURL, cmd, err); err != nil {
		return err
	}
	restart, err := scripts.KubeUpgrade(scripts.KubeUpgradeParams{Step: scripts.UpgradeRestart})
	_, err = p.l.apply(ctx, h, restart.Name, restart, err)
	return err
}
