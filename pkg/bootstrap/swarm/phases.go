package swarm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/scripts"
	"github.com/gpukit/gpukit/pkg/swarmapi"
)

// ---- swarm/engine

type enginePhase struct{ l *Layer }

func (*enginePhase) Name() string    { return PhaseEngine }
func (*enginePhase) HostLocal() bool { return true }
func (*enginePhase) Title() string   { return "Install the Docker engine" }

func (p *enginePhase) ShouldRun(ctx context.Context, h *engine.Host) (bool, string, error) {
	e, err := p.l.engineFor(ctx, h)
	if err != nil {
		return false, "", err
	}
	s, err := p.l.state(ctx, h)
	if err != nil {
		return false, "", err
	}
	if why := enginePending(e, s); why != "" {
		h.Logf("%s: %s", PhaseEngine, why)
		return true, "", nil
	}
	return false, fmt.Sprintf("%s %s installed, held and running", e.Packages[0], s.Packages[e.Packages[0]].Version), nil
}

func (p *enginePhase) Run(ctx context.Context, h *engine.Host) error {
	e, err := p.l.engineFor(ctx, h)
	if err != nil {
		return err
	}
	what := "docker engine (" + e.Source + ")"
	if e.Version != "" {
		what = "docker engine " + e.Version + " (" + e.Source + ")"
	}
	cmd, err := scripts.DockerEngine(e)
	_, err = p.l.apply(ctx, h, "install the "+what, cmd, err)
	return err
}

// ---- swarm/runtime

type runtimePhase struct{ l *Layer }

func (*runtimePhase) Name() string    { return PhaseRuntime }
func (*runtimePhase) HostLocal() bool { return true }
func (*runtimePhase) Title() string {
	return "Make the NVIDIA runtime docker's default and advertise the GPUs"
}

// dockerConfig is what swarm/runtime writes: daemon.json, the NVIDIA
// runtime's configuration (nil: left alone) and the registry mirror's CA
// (CAFile "": none).
type dockerConfig struct {
	Daemon, Runtime []byte
	CAFile          string
	CA              []byte
}

// want renders the host's daemon.json, NVIDIA runtime configuration and
// the mirror's CA from what it has; changed is false when all are as
// wanted. Docker mirrors only Docker Hub, so a swarm's services name the
// registry mirror's images by the mirror's own names: Docker is told to
// trust it (its CA) or to reach it over plain HTTP.
func (p *runtimePhase) want(ctx context.Context, h *engine.Host) (c dockerConfig, changed bool, gpus int, err error) {
	s, err := p.l.state(ctx, h)
	if err != nil {
		return c, false, 0, err
	}
	uuids, err := gpuUUIDs(h)
	if err != nil {
		return c, false, 0, err
	}
	var insecure string
	m, mirrored := p.l.inv.RegistryMirror()
	if mirrored && m.Scheme == "http" {
		insecure = m.Host
	}
	var dChanged, rChanged, caChanged bool
	c.Daemon, dChanged, err = DaemonConfig(s.Files[DaemonJSON], uuids, insecure)
	if err != nil {
		return c, false, 0, err
	}
	if len(uuids) > 0 {
		c.Runtime, rChanged = RuntimeTOML(s.Files[RuntimeConfig], swarmapi.GPUKind)
		if c.Runtime == nil && !h.DryRun() {
			return c, false, 0, fmt.Errorf("%s is missing: the NVIDIA container toolkit (%s) must be installed first", RuntimeConfig, "nvidia/container-toolkit")
		}
	}
	if mirrored && len(m.CA) > 0 {
		c.CAFile, c.CA = MirrorCAFile(m.Host), m.CA
		caChanged = !bytes.Equal(bytes.TrimRight(s.Files[c.CAFile], "\n"), bytes.TrimRight(m.CA, "\n"))
	}
	return c, dChanged || rChanged || caChanged, len(uuids), nil
}

// gpuUUIDs are the host's GPUs as nvidia-smi lists them, a GPU with MIG on
// as its MIG devices (the facts, which nvidia/verify and nvidia/mig
// refresh). A host with NVIDIA GPUs on the PCI bus that
// nvidia-smi does not list cannot advertise them yet.
func gpuUUIDs(h *engine.Host) ([]string, error) {
	f := h.Facts
	if f == nil {
		return nil, nil
	}
	var out []string
	for _, g := range f.GPUs {
		switch {
		case g.MIGEnabled():
			// A partitioned GPU is its MIG devices: each is a device the
			// NVIDIA runtime hands a container by its UUID.
			for _, d := range g.MIGDevices {
				out = append(out, d.UUID)
			}
		case g.UUID != "":
			out = append(out, g.UUID)
		}
	}
	if len(out) == 0 && len(f.PCIGPUs) > 0 {
		if h.DryRun() {
			return nil, errGPUsPending{len(f.PCIGPUs)}
		}
		return nil, fmt.Errorf("%d NVIDIA GPU(s) on the PCI bus but nvidia-smi lists none: the NVIDIA phases must succeed first", len(f.PCIGPUs))
	}
	return out, nil
}

// errGPUsPending is a dry-run's GPUs that the driver does not list yet:
// what they will be advertised as is known once it is installed.
type errGPUsPending struct{ n int }

func (e errGPUsPending) Error() string {
	return fmt.Sprintf("%d NVIDIA GPU(s) on the PCI bus are advertised once the driver lists them (after nvidia/verify)", e.n)
}

func (p *runtimePhase) ShouldRun(ctx context.Context, h *engine.Host) (bool, string, error) {
	_, changed, gpus, err := p.want(ctx, h)
	var pending errGPUsPending
	if errors.As(err, &pending) {
		return false, pending.Error(), nil
	}
	if err != nil || changed {
		return changed, "", err
	}
	if gpus == 0 {
		return false, "no GPU to advertise; docker's configuration as wanted", nil
	}
	return false, fmt.Sprintf("nvidia is docker's default runtime; %d GPU(s) advertised as %s", gpus, swarmapi.GPUKind), nil
}

func (p *runtimePhase) Run(ctx context.Context, h *engine.Host) error {
	c, _, gpus, err := p.want(ctx, h)
	if err != nil {
		return err
	}
	cmd, err := scripts.DockerConfig(scripts.BackupParams{BackupDir: BackupDir}, string(c.Daemon), string(c.Runtime), c.CAFile, strings.TrimRight(string(c.CA), "\n"))
	_, err = p.l.apply(ctx, h, fmt.Sprintf("configure docker (%d GPU(s) advertised)", gpus), cmd, err)
	return err
}

// ---- swarm/init

type initPhase struct{ l *Layer }

func (*initPhase) Name() string  { return PhaseInit }
func (*initPhase) Title() string { return "Create the swarm on the first manager" }

func (p *initPhase) Targets(hosts []*engine.Host) []*engine.Host {
	return firstManagerIn(p.l.inv, hosts)
}

// firstManagerIn is the first manager among hosts, if it is one of them.
func firstManagerIn(inv *inventory.Inventory, hosts []*engine.Host) []*engine.Host {
	m, ok := FirstManager(inv)
	return hostNamed(hosts, m.Name, ok)
}

// hostNamed is the host called name among hosts, as a target list (none
// when !ok or it is not there).
func hostNamed(hosts []*engine.Host, name string, ok bool) []*engine.Host {
	for _, h := range hosts {
		if ok && h.Name() == name {
			return []*engine.Host{h}
		}
	}
	return nil
}

func (p *initPhase) ShouldRun(ctx context.Context, h *engine.Host) (bool, string, error) {
	s, err := p.l.state(ctx, h)
	if err != nil {
		return false, "", err
	}
	m := s.Swarm
	switch {
	case m == nil && h.DryRun():
		return true, "", nil // docker is not installed yet
	case m == nil:
		return false, "", fmt.Errorf("docker does not answer")
	case m.Active() && m.ControlAvailable:
		return false, "manager of the swarm (node " + m.NodeID + ")", nil
	case m.Active():
		return false, "", fmt.Errorf("%s is a worker of another swarm; reset it first (gpukit reset --hosts %s)", h.Name(), h.Name())
	}
	return true, "", nil
}

func (p *initPhase) Run(ctx context.Context, h *engine.Host) error {
	ip, listen, err := addrs(h.Machine)
	if err != nil {
		return err
	}
	cmd, err := scripts.SwarmInit(scripts.SwarmAddrParams{AdvertiseAddr: ip, ListenAddr: listen})
	res, err := p.l.apply(ctx, h, "create the swarm (advertise "+ip+")", cmd, err)
	if err != nil {
		return err
	}
	hi := p.l.hosts.Of(h.Name())
	if id := nodeIDFrom(res.Stdout); id != "" {
		hi.nodeID = id
		hi.member = &Membership{NodeID: id, LocalNodeState: "active", ControlAvailable: true}
	}
	return nil
}

// ---- swarm/join-managers, swarm/join-workers

type joinPhase struct {
	l        *Layer
	managers bool
	// set by Prepare
	token, manager, managerID string
	// members are the node IDs the first manager lists (nil: not read, in
	// a dry-run before the swarm exists).
	members map[string]bool
}

func (p *joinPhase) Name() string {
	if p.managers {
		return PhaseJoinManagers
	}
	return PhaseJoinWorkers
}

func (p *joinPhase) Title() string {
	if p.managers {
		return "Join the other managers, one at a time"
	}
	return "Join the workers"
}

func (p *joinPhase) role() string {
	if p.managers {
		return "manager"
	}
	return "worker"
}

// MaxParallel: managers change the raft membership; one at a time keeps
// the quorum's arithmetic simple and each join confirmed before the next.
func (p *joinPhase) MaxParallel() int {
	if p.managers {
		return 1
	}
	return 0
}

func (p *joinPhase) Targets(hosts []*engine.Host) []*engine.Host {
	first, _ := FirstManager(p.l.inv)
	var out []*engine.Host
	for _, h := range hosts {
		if h.Name() != first.Name && h.Machine.HasRole(inventory.RoleManager) == p.managers {
			out = append(out, h)
		}
	}
	return out
}

// Prepare fetches the join token from the first manager, once, when a
// target is not known to be in the swarm yet. The token is a secret of the
// run from then on: redacted wherever it could appear.
func (p *joinPhase) Prepare(ctx context.Context, all, targets []*engine.Host) error {
	first := firstManagerIn(p.l.inv, all)
	if len(first) == 0 {
		m, _ := FirstManager(p.l.inv)
		return fmt.Errorf("the first manager %s is not ready (it failed or is not part of this run): the others join through it", m.Name)
	}
	fm := first[0]
	_, p.manager, _ = addrs(fm.Machine)
	fi := p.l.hosts.Of(fm.Name())
	p.managerID = fi.nodeID
	p.members = nil
	if fi.member.Active() || !fm.DryRun() {
		// A host whose swarm is gone (its manager reset and the swarm made
		// again) still says it is active, with the same manager address:
		// only the manager's list tells members from strangers.
		nodes, err := readNodes(ctx, fm)
		if err != nil {
			return err
		}
		p.members = map[string]bool{}
		for _, n := range nodes {
			p.members[n.ID] = true
		}
	}
	needed := false
	for _, t := range targets {
		if !p.l.hosts.Of(t.Name()).member.Active() {
			needed = true
		}
	}
	if !needed {
		return nil
	}
	if !fi.member.Active() && fm.DryRun() {
		p.token = "<" + p.role() + " join token of " + fm.Name() + ">"
		return nil
	}
	cmd, err := scripts.SwarmToken(p.role())
	if err != nil {
		return err
	}
	res, err := fm.Run(ctx, "read the "+p.role()+" join token", cmd, engine.SecretOutput())
	if err != nil {
		return err
	}
	p.token = strings.TrimSpace(string(res.Stdout))
	if p.token == "" {
		return fmt.Errorf("%s printed no %s join token", fm.Name(), p.role())
	}
	fm.AddSecret(p.token)
	return nil
}

func (p *joinPhase) ShouldRun(ctx context.Context, h *engine.Host) (bool, string, error) {
	s, err := p.l.state(ctx, h)
	if err != nil {
		return false, "", err
	}
	m := s.Swarm
	switch {
	case m == nil && h.DryRun():
		return true, "", nil
	case m == nil:
		return false, "", fmt.Errorf("docker does not answer")
	case !m.Active():
		return true, "", nil
	}
	if p.members != nil && p.members[m.NodeID] {
		return false, "in the swarm (node " + m.NodeID + ")", nil
	}
	if p.members == nil && slices.ContainsFunc(m.RemoteManagers, func(r struct{ NodeID, Addr string }) bool {
		return r.NodeID == p.managerID || r.Addr == p.manager
	}) {
		return false, "in the swarm (node " + m.NodeID + ")", nil
	}
	return false, "", fmt.Errorf("%s is in another swarm (node %s, managers %s) that %s does not list; reset it first (gpukit reset --hosts %s)",
		h.Name(), m.NodeID, remoteAddrs(m), p.managerName(), h.Name())
}

func (p *joinPhase) managerName() string {
	m, _ := FirstManager(p.l.inv)
	return m.Name
}

func remoteAddrs(m *Membership) string {
	var out []string
	for _, r := range m.RemoteManagers {
		out = append(out, r.Addr)
	}
	slices.Sort(out)
	return strings.Join(out, ", ")
}

func (p *joinPhase) Run(ctx context.Context, h *engine.Host) error {
	ip, listen, err := addrs(h.Machine)
	if err != nil {
		return err
	}
	cmd, err := scripts.SwarmJoin(scripts.SwarmAddrParams{AdvertiseAddr: ip, ListenAddr: listen, Manager: p.manager}, p.token)
	res, err := p.l.apply(ctx, h, "join the swarm as a "+p.role()+" through "+p.manager, cmd, err)
	if err != nil {
		return err
	}
	if id := nodeIDFrom(res.Stdout); id != "" {
		hi := p.l.hosts.Of(h.Name())
		hi.nodeID = id
		hi.member = &Membership{NodeID: id, LocalNodeState: "active", ControlAvailable: p.managers}
	}
	return nil
}

// ---- swarm/labels

type labelsPhase struct {
	l    *Layer
	only []string // hosts whose nodes are labelled; empty: all
	// set by Prepare, then by ShouldRun
	all      []*engine.Host
	updates  []scripts.NodeUpdate
	deferred []string // nodes whose update waits for their GPU tasks, why
}

func (*labelsPhase) Name() string { return PhaseLabels }
func (*labelsPhase) Title() string {
	return "Label the nodes (GPU product, count, memory, driver, CUDA) and set their roles"
}

// roleOf is the swarm role the inventory gives m.
func roleOf(m inventory.Machine) string {
	if m.HasRole(inventory.RoleManager) {
		return "manager"
	}
	return "worker"
}

func (p *labelsPhase) Targets(hosts []*engine.Host) []*engine.Host {
	return firstManagerIn(p.l.inv, hosts)
}

func (p *labelsPhase) Prepare(_ context.Context, all, _ []*engine.Host) error {
	p.all = all
	return nil
}

func (p *labelsPhase) ShouldRun(ctx context.Context, h *engine.Host) (bool, string, error) {
	if p.l.hosts.Of(h.Name()).member == nil { // --only-phases: no earlier phase read it
		if _, err := p.l.state(ctx, h); err != nil {
			return false, "", err
		}
	}
	if !p.l.hosts.Of(h.Name()).member.Active() {
		if h.DryRun() {
			return false, "the nodes are labelled once they have joined", nil
		}
		return false, "", fmt.Errorf("%s is not a swarm manager", h.Name())
	}
	cmd, err := scripts.SwarmNodes()
	if err != nil {
		return false, "", err
	}
	res, err := h.Run(ctx, "read the swarm's nodes", cmd)
	if err != nil {
		return false, "", err
	}
	nodes, err := swarmapi.ParseNodes(res.Stdout)
	if err != nil {
		return false, "", err
	}
	byID := map[string]swarmapi.Node{}
	for _, n := range nodes {
		byID[n.ID] = n
	}
	p.updates, p.deferred = nil, nil
	labelled := 0
	var changes []change
	for _, t := range p.all {
		if len(p.only) > 0 && !slices.Contains(p.only, t.Name()) {
			continue
		}
		n, ok := byID[p.l.hosts.Of(t.Name()).nodeID]
		if !ok {
			n, ok = byHostname(nodes, t)
		}
		if !ok {
			h.Logf("%s: %s is not a node of the swarm: not labelled", PhaseLabels, t.Name())
			continue
		}
		labelled++
		opts := swarmapi.LabelOptions(n.Labels, swarmapi.NodeLabels(t.Machine, t.Facts))
		// The inventory's role wins: a host made a manager there is
		// promoted, one made a worker demoted (Docker refuses to demote
		// the last manager, and says so).
		if want := roleOf(t.Machine); n.Role != want {
			opts = append(opts, "--role", want)
		}
		if len(opts) > 0 {
			changes = append(changes, change{host: t.Name(), node: n, update: scripts.NodeUpdate{ID: n.ID, Options: opts}})
		}
	}
	held, err := holdingGPUs(ctx, h, changes)
	if err != nil {
		return false, "", err
	}
	for _, c := range changes {
		if g := held[c.node.ID]; len(g.running)+len(g.finished) > 0 {
			// Any update of an active node makes swarm reject the tasks
			// holding its GPUs (swarmkit's constraint enforcer): a training
			// run would start over, a finished job run again. The labels
			// wait for the tasks.
			var parts []string
			if len(g.running) > 0 {
				parts = append(parts, fmt.Sprintf("restart its GPU tasks (%s): run init again once they are done, or drain the node first", strings.Join(g.running, ", ")))
			}
			if len(g.finished) > 0 {
				parts = append(parts, fmt.Sprintf("run its finished GPU jobs again (%s): remove their services first", strings.Join(g.finished, ", ")))
			}
			why := fmt.Sprintf("%s left as it is: updating it would make swarm %s", c.host, strings.Join(parts, "; and "))
			h.Logf("%s: %s", PhaseLabels, why)
			p.deferred = append(p.deferred, why)
			continue
		}
		p.updates = append(p.updates, c.update)
	}
	if len(p.updates) == 0 {
		if len(p.deferred) > 0 {
			return false, strings.Join(p.deferred, "; "), nil
		}
		return false, fmt.Sprintf("the labels and roles of %d node(s) are as wanted", labelled), nil
	}
	return true, "", nil
}

// change is a node update the labels phase wants.
type change struct {
	host   string
	node   swarmapi.Node
	update scripts.NodeUpdate
}

// gpuTasks are a node's tasks that hold its GPUs in the swarm's books.
type gpuTasks struct{ running, finished []string }

// holdingGPUs reads, by node ID, the tasks that hold the GPUs of the active
// nodes among changes (running, or a job's finished ones): one read on the
// manager h for them all.
func holdingGPUs(ctx context.Context, h *engine.Host, changes []change) (map[string]gpuTasks, error) {
	var ids []string
	for _, c := range changes {
		if c.node.Availability == "active" && len(c.node.GPUs) > 0 {
			ids = append(ids, c.node.ID)
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	cmd, err := scripts.SwarmNodeTasks(ids...)
	if err != nil {
		return nil, err
	}
	res, err := h.Run(ctx, "read the nodes' tasks", cmd)
	if err != nil {
		return nil, err
	}
	tasks, err := swarmapi.ParseTasks(res.Stdout)
	if err != nil {
		return nil, err
	}
	out := map[string]gpuTasks{}
	for _, t := range tasks {
		g := out[t.NodeID]
		switch {
		case t.RunningOnGPU():
			g.running = append(g.running, t.Name())
		case t.FinishedJobOnGPU():
			g.finished = append(g.finished, t.ServiceName)
		}
		out[t.NodeID] = g
	}
	return out, nil
}

func (p *labelsPhase) Run(ctx context.Context, h *engine.Host) error {
	cmd, err := scripts.SwarmNodeUpdate(p.updates)
	_, err = p.l.apply(ctx, h, fmt.Sprintf("update %d node(s): labels, roles", len(p.updates)), cmd, err)
	return err
}

// byHostname finds h's node by its hostname when no phase of the run read
// its node ID (--only-phases): only a single node that is up matches.
func byHostname(nodes []swarmapi.Node, h *engine.Host) (swarmapi.Node, bool) {
	name := h.Name()
	if h.Facts != nil && h.Facts.Hostname != "" {
		name = h.Facts.Hostname
	}
	var found []swarmapi.Node
	for _, n := range nodes {
		if n.Hostname == name && n.State != "down" {
			found = append(found, n)
		}
	}
	if len(found) != 1 {
		return swarmapi.Node{}, false
	}
	return found[0], true
}
