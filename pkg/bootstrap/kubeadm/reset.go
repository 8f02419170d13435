package kubeadm

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/scripts"
)

// Reset's phase names.
const (
	PhaseRemoveNodes = "reset/remove-nodes"
	PhaseResetNode   = "reset/node"
	// drainTimeout bounds each node's drain: pods whose disruption budget
	// never allows their eviction fail the reset instead of hanging it.
	drainTimeout = "5m"
)

// RemainingControlPlane is the control plane that stays when the named
// hosts are reset: the first of the inventory not among them. It drains the
// nodes that go and deletes them from the API.
func RemainingControlPlane(inv *inventory.Inventory, names []string) (inventory.Machine, bool) {
	for _, m := range inv.Machines {
		if m.HasRole(inventory.RoleControlPlane) && !slices.Contains(names, m.Name) {
			return m, true
		}
	}
	return inventory.Machine{}, false
}

// RemoveNodes drains the named hosts' nodes and deletes them from the API,
// on the remaining control plane, while the cluster is up (reset).
func (l *Layer) RemoveNodes(names []string) engine.Phase {
	return &removeNodesPhase{l: l, names: names}
}

// ResetNode resets the hosts it runs on (reset, scoped to the named hosts).
func (l *Layer) ResetNode() engine.Phase { return &resetNodePhase{l} }

// ---- reset/remove-nodes

type removeNodesPhase struct {
	l     *Layer
	names []string
	// set by ShouldRun: the named nodes the cluster lists
	listed []string
}

func (*removeNodesPhase) Name() string { return PhaseRemoveNodes }
func (*removeNodesPhase) Title() string {
	return "Drain the nodes that leave and delete them from the cluster"
}

func (p *removeNodesPhase) Targets(hosts []*engine.Host) []*engine.Host {
	m, ok := RemainingControlPlane(p.l.inv, p.names)
	for _, h := range hosts {
		if ok && h.Name() == m.Name {
			return []*engine.Host{h}
		}
	}
	return nil
}

func (p *removeNodesPhase) ShouldRun(ctx context.Context, h *engine.Host) (bool, string, error) {
	s, err := p.l.state(ctx, h)
	if err != nil {
		return false, "", err
	}
	if !s.APIServer {
		return false, h.Name() + " runs no control plane: no node to remove", nil
	}
	cmd, err := scripts.KubeNodes()
	if err != nil {
		return false, "", err
	}
	res, err := h.Run(ctx, "read the cluster's nodes", cmd)
	if err != nil {
		return false, "", err
	}
	nodes := strings.Fields(string(res.Stdout))
	p.listed = nil
	for _, n := range p.names {
		if slices.Contains(nodes, n) {
			p.listed = append(p.listed, n)
		}
	}
	if len(p.listed) == 0 {
		return false, "the cluster lists none of the nodes that leave", nil
	}
	return true, "", nil
}

func (p *removeNodesPhase) Run(ctx context.Context, h *engine.Host) error {
	cmd, err := scripts.KubeNodesRemove(scripts.KubeNodesRemoveParams{DrainTimeout: drainTimeout}, p.listed)
	_, err = p.l.apply(ctx, h, fmt.Sprintf("drain and delete %d node(s): %s", len(p.listed), strings.Join(p.listed, ", ")), cmd, err)
	return err
}

// ---- reset/node

type resetNodePhase struct{ l *Layer }

func (*resetNodePhase) Name() string { return PhaseResetNode }
func (*resetNodePhase) Title() string {
	return "Reset the nodes (kubeadm reset, pod network leftovers, containerd's configuration restored)"
}

func (p *resetNodePhase) ShouldRun(ctx context.Context, h *engine.Host) (bool, string, error) {
	cmd, err := scripts.KubeReset(scripts.KubeResetParams{Check: true, BackupDir: BackupDir})
	if err != nil {
		return false, "", err
	}
	res, err := h.Run(ctx, "read what a reset would undo", cmd)
	if err != nil {
		return false, "", err
	}
	var pending []string
	for _, line := range strings.Split(string(res.Stdout), "\n") {
		if what, ok := strings.CutPrefix(line, "pending: "); ok {
			pending = append(pending, what)
		}
	}
	if len(pending) == 0 {
		return false, "not a node of any cluster; nothing of gpukit's left to undo", nil
	}
	h.Logf("%s: pending: %s", PhaseResetNode, strings.Join(pending, "; "))
	return true, "", nil
}

func (p *resetNodePhase) Run(ctx context.Context, h *engine.Host) error {
	cmd, err := scripts.KubeReset(scripts.KubeResetParams{BackupDir: BackupDir})
	_, err = p.l.apply(ctx, h, "reset the kubernetes node", cmd, err)
	return err
}
