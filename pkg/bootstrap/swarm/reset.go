package swarm

import (
	"context"
	"fmt"
	"slices"

	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/scripts"
	"github.com/gpukit/gpukit/pkg/swarmapi"
)

// RemainingManager is the manager that stays when the named hosts are reset:
// the first manager of the inventory not among them. It demotes the
// managers that go and removes their nodes from the swarm's list.
func RemainingManager(inv *inventory.Inventory, names []string) (inventory.Machine, bool) {
	for _, m := range inv.Machines {
		if m.HasRole(inventory.RoleManager) && !slices.Contains(names, m.Name) {
			return m, true
		}
	}
	return inventory.Machine{}, false
}

// remainingIn is the remaining manager among hosts, if it is one of them.
func remainingIn(inv *inventory.Inventory, names []string, hosts []*engine.Host) []*engine.Host {
	m, ok := RemainingManager(inv, names)
	return hostNamed(hosts, m.Name, ok)
}

// readNodes lists the swarm's nodes on manager h.
func readNodes(ctx context.Context, h *engine.Host) ([]swarmapi.Node, error) {
	cmd, err := scripts.SwarmNodes()
	if err != nil {
		return nil, err
	}
	res, err := h.Run(ctx, "read the swarm's nodes", cmd)
	if err != nil {
		return nil, err
	}
	return swarmapi.ParseNodes(res.Stdout)
}

// nodesOf are the nodes of the named hosts (by the hostnames the facts give,
// else the inventory names); a node that is down and shares its hostname
// with a live one is left alone.
func nodesOf(nodes []swarmapi.Node, names []string, hosts []*engine.Host) []swarmapi.Node {
	hostnames := map[string]bool{}
	for _, n := range names {
		hostnames[n] = true
	}
	for _, h := range hosts {
		if slices.Contains(names, h.Name()) && h.Facts != nil && h.Facts.Hostname != "" {
			hostnames[h.Facts.Hostname] = true
		}
	}
	var out []swarmapi.Node
	for _, n := range nodes {
		if hostnames[n.Hostname] {
			out = append(out, n)
		}
	}
	return out
}

// ---- reset/demote

type demotePhase struct {
	l     *Layer
	names []string
	all   []*engine.Host
	ids   []string
}

func (*demotePhase) Name() string  { return PhaseDemote }
func (*demotePhase) Title() string { return "Demote the managers that leave" }

func (p *demotePhase) Targets(hosts []*engine.Host) []*engine.Host {
	return remainingIn(p.l.inv, p.names, hosts)
}

func (p *demotePhase) Prepare(_ context.Context, all, _ []*engine.Host) error {
	p.all = all
	return nil
}

func (p *demotePhase) ShouldRun(ctx context.Context, h *engine.Host) (bool, string, error) {
	nodes, err := readNodes(ctx, h)
	if err != nil {
		return false, "", err
	}
	p.ids = nil
	for _, n := range nodesOf(nodes, p.names, p.all) {
		if n.Role == "manager" {
			p.ids = append(p.ids, n.ID)
		}
	}
	if len(p.ids) == 0 {
		return false, "no manager among the hosts that leave", nil
	}
	return true, "", nil
}

func (p *demotePhase) Run(ctx context.Context, h *engine.Host) error {
	var updates []scripts.NodeUpdate
	for _, id := range p.ids {
		updates = append(updates, scripts.NodeUpdate{ID: id, Options: []string{"--role", "worker"}})
	}
	cmd, err := scripts.SwarmNodeUpdate(updates)
	_, err = p.l.apply(ctx, h, fmt.Sprintf("demote %d manager(s)", len(updates)), cmd, err)
	return err
}

// ---- reset/leave

type leavePhase struct{ l *Layer }

func (*leavePhase) Name() string { return PhaseLeave }
func (*leavePhase) Title() string {
	return "Leave the swarm and restore docker's configuration"
}

func (p *leavePhase) ShouldRun(ctx context.Context, h *engine.Host) (bool, string, error) {
	s, err := p.l.state(ctx, h)
	if err != nil {
		return false, "", err
	}
	inSwarm := s.Swarm != nil && s.Swarm.LocalNodeState != "inactive" && s.Swarm.LocalNodeState != ""
	if !inSwarm && len(s.Backups) == 0 {
		return false, "not in a swarm; no configuration of gpukit's to restore", nil
	}
	return true, "", nil
}

func (p *leavePhase) Run(ctx context.Context, h *engine.Host) error {
	cmd, err := scripts.SwarmReset(scripts.BackupParams{BackupDir: BackupDir})
	_, err = p.l.apply(ctx, h, "leave the swarm, restore docker's configuration", cmd, err)
	return err
}

// ---- reset/remove-nodes

type removePhase struct {
	l     *Layer
	names []string
	all   []*engine.Host
	ids   []string
}

func (*removePhase) Name() string  { return PhaseRemoveNodes }
func (*removePhase) Title() string { return "Remove the nodes that left from the swarm's list" }

func (p *removePhase) Targets(hosts []*engine.Host) []*engine.Host {
	return remainingIn(p.l.inv, p.names, hosts)
}

func (p *removePhase) Prepare(_ context.Context, all, _ []*engine.Host) error {
	p.all = all
	return nil
}

func (p *removePhase) ShouldRun(ctx context.Context, h *engine.Host) (bool, string, error) {
	nodes, err := readNodes(ctx, h)
	if err != nil {
		return false, "", err
	}
	p.ids = nil
	for _, n := range nodesOf(nodes, p.names, p.all) {
		p.ids = append(p.ids, n.ID)
	}
	if len(p.ids) == 0 {
		return false, "no node of the reset hosts is listed", nil
	}
	return true, "", nil
}

func (p *removePhase) Run(ctx context.Context, h *engine.Host) error {
	cmd, err := scripts.SwarmNodeRemove(p.ids)
	_, err = p.l.apply(ctx, h, fmt.Sprintf("remove %d node(s)", len(p.ids)), cmd, err)
	return err
}

// ---- status/nodes

type nodesPhase struct{ l *Layer }

func (*nodesPhase) Name() string  { return PhaseNodes }
func (*nodesPhase) Title() string { return "Read the swarm's nodes" }

// Targets: the first manager that answered (the run connects to every
// manager; any of them lists the whole swarm).
func (p *nodesPhase) Targets(hosts []*engine.Host) []*engine.Host {
	for _, h := range hosts {
		if h.Machine.HasRole(inventory.RoleManager) {
			return []*engine.Host{h}
		}
	}
	return nil
}

func (p *nodesPhase) Run(ctx context.Context, h *engine.Host) error {
	nodes, err := readNodes(ctx, h)
	if err != nil {
		return err
	}
	p.l.mu.Lock()
	p.l.nodes = nodes
	p.l.mu.Unlock()
	return nil
}
