// Package hostproxy points hosts at the site's HTTP proxy (inventory
// spec.proxy, or a host's own): apt or dnf, the services that pull images
// (containerd and the kubelet, or dockerd) and gpukit's own downloads. It
// runs before anything is installed, and `gpukit reset` takes it back.
package hostproxy

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/probe"
	"github.com/gpukit/gpukit/pkg/scripts"
)

// Phase names.
const (
	PhaseApply  = "host/proxy"
	PhaseRemove = "reset/proxy"
)

// Layer is the proxy settings of an inventory's hosts.
type Layer struct {
	inv *inventory.Inventory
	// cluster is inv.ClusterNoProxy, computed once for every host.
	cluster func() []string
}

// New returns the layer for inv.
func New(inv *inventory.Inventory) *Layer {
	return &Layer{inv: inv, cluster: sync.OnceValue(inv.ClusterNoProxy)}
}

// Apply is host/proxy: each host gets its proxy, or loses the one gpukit
// gave it when the inventory no longer names one.
func (l *Layer) Apply() engine.Phase { return &applyPhase{l} }

// Remove is reset/proxy: gpukit's proxy settings leave the host.
func (l *Layer) Remove() engine.Phase { return &removePhase{l} }

// units are the services that fetch for the orchestrator: containerd pulls
// for the kubelet (which reaches registries for credential providers too);
// on swarm dockerd pulls.
func (l *Layer) units() []string {
	if l.inv.Cluster.Spec.Orchestrator == inventory.Swarm {
		return []string{"docker"}
	}
	return []string{"containerd", "kubelet"}
}

// params are h's settings in mode: its proxy with the cluster's own
// networks past it.
func (l *Layer) params(ctx context.Context, h *engine.Host, mode string) (scripts.HostProxyParams, error) {
	f, err := probe.Ensure(ctx, h)
	if err != nil {
		return scripts.HostProxyParams{}, err
	}
	fam, err := f.OS.Family()
	if err != nil {
		return scripts.HostProxyParams{}, err
	}
	p := scripts.HostProxyParams{Family: fam, Mode: mode, Units: l.units()}
	if mode == scripts.ProxyApply || mode == scripts.ProxyCheck {
		pr := h.Machine.Proxy
		p.HTTP, p.HTTPS, p.NoProxy, p.APTDirect = pr.HTTP, pr.HTTPS, inventory.NoProxyFor(h.Machine, l.cluster()), pr.NoProxy
	}
	return p, nil
}

// pending runs the check of mode and returns its "pending: " lines.
func (l *Layer) pending(ctx context.Context, h *engine.Host, mode string) ([]string, error) {
	p, err := l.params(ctx, h, mode)
	if err != nil {
		return nil, err
	}
	cmd, err := scripts.HostProxy(p)
	if err != nil {
		return nil, err
	}
	res, err := h.Run(ctx, cmd.Name, cmd)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, line := range strings.Split(string(res.Stdout), "\n") {
		if what, ok := strings.CutPrefix(line, "pending: "); ok {
			out = append(out, what)
		}
	}
	return out, nil
}

// left says whether the probe found gpukit's proxy settings on h.
func (l *Layer) left(ctx context.Context, h *engine.Host) (bool, error) {
	f, err := probe.Ensure(ctx, h)
	if err != nil {
		return false, err
	}
	return f.GPUKitProxy, nil
}

func (l *Layer) run(ctx context.Context, h *engine.Host, mode string) error {
	p, err := l.params(ctx, h, mode)
	if err != nil {
		return err
	}
	cmd, err := scripts.HostProxy(p)
	if err != nil {
		return err
	}
	_, err = h.Apply(ctx, cmd.Name, cmd)
	return err
}

type applyPhase struct{ l *Layer }

func (*applyPhase) Name() string    { return PhaseApply }
func (*applyPhase) HostLocal() bool { return true }
func (*applyPhase) Title() string {
	return "Point the package manager and the container runtime at the site's proxy"
}

func (p *applyPhase) ShouldRun(ctx context.Context, h *engine.Host) (bool, string, error) {
	on := h.Machine.Proxy.Enabled()
	mode := scripts.ProxyCheck
	if !on {
		// the probe saw none of gpukit's: no second round trip
		if left, err := p.l.left(ctx, h); err != nil || !left {
			return false, "no proxy for this host", err
		}
		mode = scripts.ProxyCheckRemove
	}
	todo, err := p.l.pending(ctx, h, mode)
	if err != nil {
		return false, "", err
	}
	switch {
	case len(todo) > 0:
		h.Logf("%s: pending: %s", PhaseApply, strings.Join(todo, "; "))
		return true, "", nil
	case on:
		return false, fmt.Sprintf("proxy %s set for the package manager and %s", h.Machine.Proxy.HTTPS, strings.Join(p.l.units(), ", ")), nil
	default:
		return false, "no proxy for this host", nil
	}
}

func (p *applyPhase) Run(ctx context.Context, h *engine.Host) error {
	if h.Machine.Proxy.Enabled() {
		return p.l.run(ctx, h, scripts.ProxyApply)
	}
	return p.l.run(ctx, h, scripts.ProxyRemove)
}

type removePhase struct{ l *Layer }

func (*removePhase) Name() string  { return PhaseRemove }
func (*removePhase) Title() string { return "Remove the proxy settings gpukit wrote" }

func (p *removePhase) ShouldRun(ctx context.Context, h *engine.Host) (bool, string, error) {
	if any, err := p.l.left(ctx, h); err != nil || !any {
		return false, "no proxy settings of gpukit's", err
	}
	left, err := p.l.pending(ctx, h, scripts.ProxyCheckRemove)
	if err != nil {
		return false, "", err
	}
	if len(left) == 0 {
		return false, "no proxy settings of gpukit's", nil
	}
	h.Logf("%s: to remove: %s", PhaseRemove, strings.Join(left, "; "))
	return true, "", nil
}

func (p *removePhase) Run(ctx context.Context, h *engine.Host) error {
	return p.l.run(ctx, h, scripts.ProxyRemove)
}
