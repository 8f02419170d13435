// Package swarm bootstraps a GPU-aware Docker Swarm on hosts whose NVIDIA
// layer is done: the Docker engine per OS family, the NVIDIA runtime as
// docker's default with every GPU advertised as a generic resource (and the
// runtime honouring Swarm's assignment), the swarm itself (first manager,
// other managers one at a time, workers in parallel) and node labels from
// the facts; and the phases of add-node, status and reset. internal/flow
// lists them in each command's order.
package swarm

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"sync"

	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/probe"
	"github.com/gpukit/gpukit/pkg/scripts"
	"github.com/gpukit/gpukit/pkg/ssh"
	"github.com/gpukit/gpukit/pkg/swarmapi"
)

// Phase names, stable for --only-phases / --skip-phases, events and logs.
const (
	PhaseEngine       = "swarm/engine"
	PhaseRuntime      = "swarm/runtime"
	PhaseInit         = "swarm/init"
	PhaseJoinManagers = "swarm/join-managers"
	PhaseJoinWorkers  = "swarm/join-workers"
	PhaseLabels       = "swarm/labels"

	PhaseDemote      = "reset/demote"
	PhaseLeave       = "reset/leave"
	PhaseRemoveNodes = "reset/remove-nodes"

	PhaseNodes = "status/nodes"
)

// Port is the swarm's management port on managers.
const Port = 2377

// Layer is the swarm part of one run. Its phases share what they learned
// about each host.
type Layer struct {
	inv *inventory.Inventory

	hosts engine.PerHost[hostInfo]

	mu    sync.Mutex
	nodes []swarmapi.Node // status: what the manager listed
}

// hostInfo is one host's share; only the goroutine working on the host
// writes it (phases of a run are separated by waits).
type hostInfo struct {
	decided bool
	engine  scripts.DockerEngineParams
	err     error
	state   *State // nil: not read yet, or stale after a change
	// member is the last membership read; a configuration change (docker
	// restart) does not change it, so it outlives state.
	member *Membership
	nodeID string
}

// New returns the layer for inv.
func New(inv *inventory.Inventory) *Layer {
	return &Layer{inv: inv}
}

// FirstManager is the swarm's first manager: the first host with the
// manager role, in inventory order. It creates the swarm and lets the
// others join.
func FirstManager(inv *inventory.Inventory) (inventory.Machine, bool) {
	for _, m := range inv.Machines {
		if m.HasRole(inventory.RoleManager) {
			return m, true
		}
	}
	return inventory.Machine{}, false
}

// engineFor decides once per host where its Docker engine comes from.
func (l *Layer) engineFor(ctx context.Context, h *engine.Host) (scripts.DockerEngineParams, error) {
	hi := l.hosts.Of(h.Name())
	if !hi.decided {
		f, err := probe.Ensure(ctx, h)
		if err != nil {
			return scripts.DockerEngineParams{}, err
		}
		hi.engine, hi.err = Engine(l.inv, f)
		hi.decided = true
	}
	return hi.engine, hi.err
}

// state returns the host's swarm state, read once and again after every
// change the layer made.
func (l *Layer) state(ctx context.Context, h *engine.Host) (*State, error) {
	hi := l.hosts.Of(h.Name())
	if hi.state != nil {
		return hi.state, nil
	}
	e, err := l.engineFor(ctx, h)
	if err != nil {
		return nil, err
	}
	cmd, err := scripts.SwarmState(scripts.SwarmStateParams{Family: e.Family, Packages: append(append([]string{}, e.Packages...), e.Extra...), BackupDir: BackupDir})
	if err != nil {
		return nil, err
	}
	res, err := h.Run(ctx, "read the docker state", cmd)
	if err != nil {
		return nil, err
	}
	s, err := ParseState(res.Stdout)
	if err != nil {
		return nil, err
	}
	hi.state, hi.member = s, s.Swarm
	if s.Swarm.Active() {
		hi.nodeID = s.Swarm.NodeID
	}
	return s, nil
}

// apply runs a write (or records it, in dry-run) and marks the state stale.
func (l *Layer) apply(ctx context.Context, h *engine.Host, step string, cmd ssh.Command, err error) (ssh.Result, error) {
	if err != nil {
		return ssh.Result{}, err
	}
	res, err := h.Apply(ctx, step, cmd)
	l.hosts.Of(h.Name()).state = nil
	return res, err
}

// addrs are a host's swarm addresses: the inventory address, which must be
// an IP (Swarm advertises an address, not a name), and it with the port.
func addrs(m inventory.Machine) (ip, withPort string, err error) {
	a, err := netip.ParseAddr(m.NodeIP())
	if err != nil {
		return "", "", fmt.Errorf("swarm nodes advertise an IP address; %s's address %q is not one and was not resolved (it is reached through a bastion): write its IP in the inventory", m.Name, m.Address)
	}
	return a.String(), net.JoinHostPort(a.String(), strconv.Itoa(Port)), nil
}

// The layer's phases, in the order the commands list them (internal/flow).
func (l *Layer) Engine() engine.Phase       { return &enginePhase{l} }
func (l *Layer) Runtime() engine.Phase      { return &runtimePhase{l} }
func (l *Layer) Init() engine.Phase         { return &initPhase{l} }
func (l *Layer) JoinManagers() engine.Phase { return &joinPhase{l: l, managers: true} }
func (l *Layer) JoinWorkers() engine.Phase  { return &joinPhase{l: l} }

// Labels labels the nodes of the named hosts (all: every host of the run).
func (l *Layer) Labels(only ...string) engine.Phase { return &labelsPhase{l: l, only: only} }

// Demote, Leave and RemoveNodes reset the named hosts (reset).
func (l *Layer) Demote(names []string) engine.Phase      { return &demotePhase{l: l, names: names} }
func (l *Layer) Leave() engine.Phase                     { return &leavePhase{l} }
func (l *Layer) RemoveNodes(names []string) engine.Phase { return &removePhase{l: l, names: names} }

// Nodes reads the swarm's nodes on the first manager that answers (status).
func (l *Layer) Nodes() engine.Phase { return &nodesPhase{l} }

// ListedNodes are the nodes the status phase read.
func (l *Layer) ListedNodes() []swarmapi.Node {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.nodes
}
