package etcd

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/scripts"
	"github.com/gpukit/gpukit/pkg/ssh"
)

const (
	// restoreDir holds the uploaded snapshot on a control plane.
	restoreDir = "/var/lib/gpukit/etcd-restore"
	// holdDir is where the stop sets the control plane's static pods aside.
	holdDir = "/etc/kubernetes/gpukit-restore"
	// beforeDir keeps each member's data as it was before a restore.
	beforeDir    = "/var/lib/gpukit/etcd-before-restore"
	stopTimeout  = 3 * time.Minute
	startTimeout = 5 * time.Minute
)

// Restore is one `gpukit etcd restore`: the snapshot From (checked against
// its sha256 before anything else) restored on every control plane of the
// inventory, all stopped before any is restored and all restored before
// any starts, then the cluster checked from the first.
type Restore struct {
	inv   *inventory.Inventory
	from  string
	sum   string
	first Target
	stamp string

	mu      sync.Mutex
	members map[string]member // host -> its etcd member
	checked Checked
}

// member is a control plane's etcd member as its static pod has it.
type member struct {
	name, peer, dataDir, image string
}

// Checked is what the check found after the restore.
type Checked struct {
	Members, Healthy, Nodes int
}

// NewRestore returns the restore of inv's etcd from the snapshot from,
// whose sha256 sum was checked (ReadSum); first picks the control plane
// the cluster is checked from.
func NewRestore(inv *inventory.Inventory, from, sum string, first Target, now time.Time) *Restore {
	return &Restore{inv: inv, from: from, sum: sum, first: first, stamp: now.UTC().Format("20060102T150405Z"), members: map[string]member{}}
}

// Phases are the restore's, in order: each is over every control plane
// before the next starts, and a failure anywhere stops the run there.
func (r *Restore) Phases() []engine.Phase {
	return []engine.Phase{&membersPhase{r}, &uploadPhase{r}, &restoreStep{r, scripts.RestoreStop},
		&restoreStep{r, scripts.RestoreRestore}, &restoreStep{r, scripts.RestoreStart}, &checkPhase{r}}
}

// Result is what the check found.
func (r *Restore) Result() Checked {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.checked
}

// controlPlanes are inv's control planes among hosts.
func controlPlanes(inv *inventory.Inventory, hosts []*engine.Host) []*engine.Host {
	var out []*engine.Host
	for _, h := range hosts {
		if h.Machine.HasRole(inventory.RoleControlPlane) {
			out = append(out, h)
		}
	}
	return out
}

type membersPhase struct{ r *Restore }

func (*membersPhase) Name() string           { return PhaseMembers }
func (*membersPhase) Title() string          { return "Read each control plane's etcd member" }
func (*membersPhase) StopRunOnFailure() bool { return true }

func (p *membersPhase) Targets(hosts []*engine.Host) []*engine.Host {
	return controlPlanes(p.r.inv, hosts)
}

// Prepare refuses a restore that would leave out a control plane: one
// member restored while another keeps its data would split the cluster.
func (p *membersPhase) Prepare(_ context.Context, _, targets []*engine.Host) error {
	var missing []string
	for _, m := range p.r.inv.Machines {
		if m.HasRole(inventory.RoleControlPlane) && !slices.ContainsFunc(targets, func(h *engine.Host) bool { return h.Name() == m.Name }) {
			missing = append(missing, m.Name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("every control plane takes part in a restore, and %s cannot be reached: nothing was changed", strings.Join(missing, ", "))
	}
	return nil
}

func (p *membersPhase) Run(ctx context.Context, h *engine.Host) error {
	cmd, err := scripts.EtcdMembers()
	if err != nil {
		return err
	}
	res, err := h.Run(ctx, cmd.Name, cmd, engine.DataOutput())
	if err != nil {
		return err
	}
	kv := map[string]string{}
	for _, line := range strings.Split(string(res.Stdout), "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), "="); ok {
			kv[k] = v
		}
	}
	m := member{name: kv["name"], peer: kv["peer"], dataDir: kv["datadir"], image: kv["image"]}
	if m.name == "" || m.peer == "" || m.dataDir == "" || m.image == "" {
		return fmt.Errorf("the etcd static pod names no member name, peer URL, data directory or image: %q", strings.TrimSpace(string(res.Stdout)))
	}
	if kv["stopped"] == "1" {
		h.Logf("%s: stopped by a restore that did not finish: this one goes on from there", PhaseMembers)
	}
	p.r.mu.Lock()
	p.r.members[h.Name()] = m
	p.r.mu.Unlock()
	return nil
}

type uploadPhase struct{ r *Restore }

func (*uploadPhase) Name() string { return PhaseUpload }
func (*uploadPhase) Title() string {
	return "Upload the snapshot to every control plane (checked against its sha256 there)"
}
func (*uploadPhase) StopRunOnFailure() bool { return true }

func (p *uploadPhase) Targets(hosts []*engine.Host) []*engine.Host {
	return controlPlanes(p.r.inv, hosts)
}

func (p *uploadPhase) Run(ctx context.Context, h *engine.Host) error {
	f, err := os.Open(p.r.from)
	if err != nil {
		return err
	}
	defer f.Close()
	return h.Upload(ctx, "upload "+p.r.from, ssh.File{Path: restoreDir + "/snapshot.db", Mode: 0o600, Content: f, Sudo: true})
}

// restoreStep is one of the restore's steps on every control plane.
type restoreStep struct {
	r    *Restore
	step string
}

func (p *restoreStep) Name() string {
	return map[string]string{scripts.RestoreStop: PhaseStop, scripts.RestoreRestore: PhaseRestore, scripts.RestoreStart: PhaseStart}[p.step]
}

func (p *restoreStep) Title() string {
	switch p.step {
	case scripts.RestoreStop:
		return "Stop etcd and the control plane on every control plane"
	case scripts.RestoreRestore:
		return "Restore each member from the snapshot (its data before kept)"
	}
	return "Start every control plane again; wait for etcd and the API server"
}

// StopRunOnFailure: no member is restored unless all stopped, and none
// started unless all were restored.
func (p *restoreStep) StopRunOnFailure() bool { return p.step != scripts.RestoreStart }

func (p *restoreStep) Targets(hosts []*engine.Host) []*engine.Host {
	return controlPlanes(p.r.inv, hosts)
}

func (p *restoreStep) Run(ctx context.Context, h *engine.Host) error {
	par := scripts.EtcdRestoreParams{Step: p.step, Hold: holdDir}
	switch p.step {
	case scripts.RestoreStop:
		par.TimeoutSeconds = int(stopTimeout.Seconds())
	case scripts.RestoreStart:
		par.TimeoutSeconds = int(startTimeout.Seconds())
	case scripts.RestoreRestore:
		p.r.mu.Lock()
		m, ok := p.r.members[h.Name()]
		var cluster []string
		for _, o := range p.r.members {
			cluster = append(cluster, o.name+"="+o.peer)
		}
		p.r.mu.Unlock()
		if !ok {
			return fmt.Errorf("no etcd member was read on %s (%s did not run)", h.Name(), PhaseMembers)
		}
		slices.Sort(cluster)
		par.Snapshot, par.SHA256 = restoreDir+"/snapshot.db", p.r.sum
		par.Name, par.PeerURL, par.DataDir, par.Image = m.name, m.peer, m.dataDir, m.image
		par.InitialCluster = strings.Join(cluster, ",")
		par.Token = "gpukit-restore-" + p.r.stamp
		par.Before = beforeDir + "/" + p.r.stamp
	}
	cmd, err := scripts.EtcdRestore(par)
	if err != nil {
		return err
	}
	_, err = h.Apply(ctx, cmd.Name, cmd)
	return err
}

type checkPhase struct{ r *Restore }

func (*checkPhase) Name() string { return PhaseCheck }
func (*checkPhase) Title() string {
	return "Check the cluster: every member started and healthy, the nodes listed"
}

func (p *checkPhase) Targets(hosts []*engine.Host) []*engine.Host { return p.r.first(hosts) }

func (p *checkPhase) Run(ctx context.Context, h *engine.Host) error {
	cmd, err := scripts.EtcdRestore(scripts.EtcdRestoreParams{Step: scripts.RestoreCheck})
	if err != nil {
		return err
	}
	if h.DryRun() {
		return nil
	}
	res, err := h.Run(ctx, cmd.Name, cmd)
	if err != nil {
		return err
	}
	var c Checked
	for _, line := range strings.Split(string(res.Stdout), "\n") {
		k, v, _ := strings.Cut(strings.TrimSpace(line), "=")
		n, _ := strconv.Atoi(v)
		switch k {
		case "members":
			c.Members = n
		case "healthy":
			c.Healthy = n
		case "nodes":
			c.Nodes = n
		}
	}
	p.r.mu.Lock()
	p.r.checked = c
	want := len(p.r.members)
	p.r.mu.Unlock()
	if c.Members != want || c.Healthy != want || c.Nodes == 0 {
		return fmt.Errorf("after the restore: %d of %d etcd members started, %d healthy, %d nodes listed", c.Members, want, c.Healthy, c.Nodes)
	}
	h.Logf("%s: %d etcd members started and healthy; the API lists %d nodes", PhaseCheck, c.Members, c.Nodes)
	return nil
}
