package upgrade

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/etcd"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/nvidia"
	"github.com/gpukit/gpukit/pkg/scripts"
)

// next is the rollout's wave planner. Between waves it reads the nodes
// again: every GPU node that cannot take pods counts against the budget -
// ours that failed (left cordoned), and those someone else cordoned - so
// that never more than the budget is out of service, whoever took it out.
func (u *Upgrade) next(ctx context.Context, pending []*engine.Host, done []engine.Outcome) engine.Wave {
	u.mu.Lock()
	defer u.mu.Unlock()
	w := engine.Wave{Skip: map[*engine.Host]string{}}
	defer func() { u.stopped = w.Stop }()
	if u.orch == nil {
		w.Stop = "the rollout has no plan (" + PhasePlan + " did not run)"
		return w
	}
	// The outcome of the last wave, into the state.
	var failed []string
	cpFailed := false
	for _, o := range done {
		switch {
		case o.Err != nil:
			failed = append(failed, o.Host.Name())
			cpFailed = cpFailed || o.Host.Machine.HasRole(inventory.RoleControlPlane)
		case o.Left == "":
			u.finished[o.Host.Name()] = true
		}
	}
	for _, o := range done[u.seen:] {
		var err error
		switch {
		case o.Err != nil:
			err = u.record(o.Host.Name(), Failed, o.Err.Error())
		case o.Left != "":
			err = u.record(o.Host.Name(), Skipped, o.Left)
		}
		if err != nil { // a resumed run would not know this wave
			w.Stop = "stopped: the rollout state cannot be written: " + err.Error()
			return w
		}
	}
	u.seen = len(done)
	list, err := u.orch.Nodes(ctx)
	if err != nil {
		w.Stop = "stopped: " + err.Error()
		return w
	}
	if len(failed) > 0 && (!u.o.ContinueOnFailure || (u.o.Canary > 0 && u.waves == 1) || (u.o.EveryNode && cpFailed)) {
		// A node that failed once it was drained stays cordoned; one whose
		// drain failed was handed back untouched.
		var kept, back []string
		for _, name := range failed {
			if i := slices.IndexFunc(list, func(n Node) bool { return n.Name == u.nodeOf(name) }); i >= 0 && list[i].Ours {
				kept = append(kept, name)
			} else {
				back = append(back, name)
			}
		}
		var parts []string
		if len(kept) > 0 {
			parts = append(parts, strings.Join(kept, ", ")+" failed and stays cordoned")
		}
		if len(back) > 0 {
			parts = append(parts, strings.Join(back, ", ")+" failed before any change and is schedulable again")
		}
		what := "stopped: "
		if u.o.Canary > 0 && u.waves == 1 {
			what = "stopped: the canary: "
		}
		w.Stop = what + strings.Join(parts, "; ") + " (fix it, then run again with --resume; --continue-on-failure goes on past failed nodes)"
		return w
	}
	var take []*engine.Host
	for _, h := range pending {
		if why := u.skipLocked(h.Name()); why != "" {
			w.Skip[h] = why
			if why == cordonedElsewhere {
				u.notTaken = append(u.notTaken, h.Name())
			}
			continue
		}
		take = append(take, h)
	}
	if len(take) == 0 {
		return w
	}
	// Nodes a killed run left cordoned go first: they are out of service.
	// The host the orchestrator is reached through goes last otherwise, and
	// alone: its reboot takes the API (or the swarm's manager) away from
	// the other nodes of a wave.
	if u.o.EveryNode {
		// The cluster's own upgrade: the control planes first, one at a
		// time in the inventory's order (the first one's kubeadm upgrade
		// apply moves the cluster), and no worker before all of them are
		// done: a kubelet may not be newer than an API server.
		cp := func(h *engine.Host) bool { return h.Machine.HasRole(inventory.RoleControlPlane) }
		if i := slices.IndexFunc(take, cp); i >= 0 {
			take = take[i : i+1]
		} else if why := u.controlPlanesBehindLocked(); why != "" {
			w.Stop = "stopped: " + why + ": the workers wait (a kubelet may not be newer than an API server)"
			return w
		}
		// Workers a killed run left cordoned go first: they are out of
		// service.
		slices.SortStableFunc(take, func(a, b *engine.Host) int {
			return b2i(!u.ours[a.Name()]) - b2i(!u.ours[b.Name()])
		})
	} else {
		rank := func(h *engine.Host) int {
			switch {
			case u.ours[h.Name()]:
				return 0
			case h.Name() == u.apiHost:
				return 2
			}
			return 1
		}
		slices.SortStableFunc(take, func(a, b *engine.Host) int { return rank(a) - rank(b) })
		if i := slices.IndexFunc(take, func(h *engine.Host) bool { return h.Name() == u.apiHost }); i == 0 {
			take = take[:1]
		} else if i > 0 {
			take = slices.Delete(take, i, i+1)
		}
	}
	out := 0
	var outNames []string
	for i := range list {
		n := &list[i]
		if u.counts(u.cpNodes, *n) && n.Unschedulable && !u.cordonedInWave(n, take) {
			out++
			outNames = append(outNames, n.Name)
		}
	}
	room := u.budget - out
	if u.o.Canary > 0 && u.waves == 0 {
		room = min(room, u.o.Canary)
	}
	if room <= 0 {
		w.Stop = fmt.Sprintf("stopped: %d GPU nodes cannot take pods (%s): --max-unavailable %s (%d nodes) leaves no room", out, strings.Join(outNames, ", "), u.o.Budget, u.budget)
		return w
	}
	// Nodes a killed run left cordoned are already out: they take no room
	// beyond their own.
	for _, h := range take {
		if len(w.Hosts) == room {
			break
		}
		w.Hosts = append(w.Hosts, h)
		u.planned = append(u.planned, h.Name())
	}
	u.waves++
	return w
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// controlPlanesBehindLocked names a control plane that still needs the
// change and did not get it (left for its training, skipped), or "".
func (u *Upgrade) controlPlanesBehindLocked() string {
	for _, m := range u.inv.Machines {
		if !m.HasRole(inventory.RoleControlPlane) || u.finished[m.Name] {
			continue
		}
		if len(u.pending[m.Name]) == 0 && !u.ours[m.Name] {
			continue // nothing to change there
		}
		why := u.left[m.Name]
		if why == "" {
			why = u.skipLocked(m.Name)
		}
		if why == "" {
			why = "not upgraded"
		}
		return "control plane " + m.Name + " is not upgraded (" + why + ")"
	}
	return ""
}

// nodeOf is the node of the host named name.
func (u *Upgrade) nodeOf(name string) string {
	for _, m := range u.inv.Machines {
		if m.Name == name {
			return u.orch.NodeName(m)
		}
	}
	return name
}

// cordonedInWave: n is cordoned by a gpukit upgrade and its host is among
// take (it goes into a wave, where it counts as the wave's).
func (u *Upgrade) cordonedInWave(n *Node, take []*engine.Host) bool {
	return n.Ours && slices.ContainsFunc(take, func(h *engine.Host) bool { return u.nodeOf(h.Name()) == n.Name })
}

// cordonedElsewhere is why a node someone else cordoned is left out.
const cordonedElsewhere = "cordoned by someone else: left alone (name it with --hosts to upgrade it)"

// skipLocked says why a host takes no part in the rollout, or "".
func (u *Upgrade) skipLocked(name string) string {
	if why := u.skips[name]; why != "" && !u.ours[name] {
		return why
	}
	n, ok := u.nodes[name]
	switch {
	case !ok:
		return "not a node of the cluster"
	case u.o.Selector != nil && !u.o.Selector.Matches(labels.Set(n.Labels)):
		return "not selected by --selector " + u.o.Selector.String()
	case n.Unschedulable && !u.ours[name] && !slices.Contains(u.o.Named, name):
		return cordonedElsewhere
	case len(u.pending[name]) == 0 && !u.ours[name]:
		return "nothing to change"
	}
	return ""
}

// ---- upgrade/etcd-snapshot

type snapshotPhase struct{ u *Upgrade }

func (*snapshotPhase) Name() string  { return PhaseEtcdSnapshot }
func (*snapshotPhase) Title() string { return "Snapshot etcd before the first node" }

func (p *snapshotPhase) Targets(hosts []*engine.Host) []*engine.Host { return p.u.target(hosts) }

func (p *snapshotPhase) ShouldRun(_ context.Context, h *engine.Host) (bool, string, error) {
	u := p.u
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.o.SkipEtcdSnapshot {
		return false, "--skip-etcd-snapshot", nil
	}
	todo := 0
	for _, m := range u.inv.Machines {
		if len(u.pending[m.Name]) > 0 || u.ours[m.Name] {
			todo++
		}
	}
	if todo == 0 {
		return false, "no node to upgrade", nil
	}
	if s := u.o.State; s != nil && s.Snapshot != "" {
		u.snapshot = s.Snapshot
		return false, "taken when the rollout started: " + s.Snapshot, nil
	}
	return true, "", nil
}

func (p *snapshotPhase) Run(ctx context.Context, h *engine.Host) error {
	what := "driver-" + p.u.driverTarget()
	if p.u.o.Snapshot != "" {
		what = p.u.o.Snapshot
	}
	path, _, err := etcd.Snapshot(ctx, h, fmt.Sprintf("before-%s-%s.db", what, p.u.now().UTC().Format("20060102T150405Z")))
	if err != nil {
		return fmt.Errorf("%w (--skip-etcd-snapshot goes on without one)", err)
	}
	if h.DryRun() {
		return nil
	}
	p.u.mu.Lock()
	p.u.snapshot = path
	p.u.mu.Unlock()
	h.Logf("%s: etcd snapshot at %s on %s", PhaseEtcdSnapshot, path, h.Name())
	if s := p.u.o.State; s != nil {
		s.mu.Lock()
		s.Snapshot = h.Name() + ":" + path
		s.mu.Unlock()
		return s.Save()
	}
	return nil
}

func (u *Upgrade) driverTarget() string {
	v := u.inv.Cluster.Spec.Versions.NvidiaDriver
	if v == "" {
		return "unknown"
	}
	return v
}

// ---- upgrade/cordon

type cordonPhase struct{ u *Upgrade }

func (*cordonPhase) Name() string  { return PhaseCordon }
func (*cordonPhase) Title() string { return "Cordon the node" }

func (p *cordonPhase) ShouldRun(_ context.Context, h *engine.Host) (bool, string, error) {
	p.u.mu.Lock()
	defer p.u.mu.Unlock()
	if p.u.ours[h.Name()] {
		return false, "cordoned by the upgrade run that stopped", nil
	}
	if _, ok := p.u.orch.(cordoner); !ok {
		return false, "no cordon: the drain takes the node out of service (a swarm node paused, then made active again, would lose its GPU tasks)", nil
	}
	return true, "", nil
}

func (p *cordonPhase) Run(ctx context.Context, h *engine.Host) error {
	name := p.u.node(h)
	// Recorded first: a crash right after the cordon knows the node is out.
	if err := p.u.record(h.Name(), InProgress, ""); err != nil {
		return fmt.Errorf("rollout state: %w", err)
	}
	k := p.u.client()
	return h.WriteAPI(ctx, "cordon "+name, k.Says(OpCordon, name), func(ctx context.Context) error {
		return k.(cordoner).Cordon(ctx, name, p.u.now())
	})
}

// ---- upgrade/drain

type drainPhase struct{ u *Upgrade }

func (*drainPhase) Name() string { return PhaseDrain }
func (*drainPhase) Title() string {
	return "Checkpoint and wait for training, then drain the node (Kubernetes: through its PodDisruptionBudgets)"
}

func (p *drainPhase) Run(ctx context.Context, h *engine.Host) error {
	u, k, name := p.u, p.u.client(), p.u.node(h)
	training, err := k.Training(ctx, name)
	if err != nil {
		return err
	}
	if len(training) > 0 {
		for _, w := range training {
			h.Logf("%s: training %s (%s)", PhaseDrain, w.Name, w.Why)
		}
		if err := p.checkpoint(ctx, h, training); err != nil {
			return err
		}
		if !h.DryRun() && u.o.WaitForJobs > 0 {
			if training, err = p.waitTraining(ctx, h, name); err != nil {
				return err
			}
		}
	}
	if len(training) > 0 && !u.o.Force {
		names := make([]string, len(training))
		for i, w := range training {
			names[i] = w.Name
		}
		why := fmt.Sprintf("training still running (%s): left alone, never evicted without --force", strings.Join(names, ", "))
		if u.o.WaitForJobs > 0 {
			why = fmt.Sprintf("training still running after %s (%s): left alone, never evicted without --force", u.o.WaitForJobs, strings.Join(names, ", "))
		}
		h.Logf("%s: %s", PhaseDrain, why)
		if _, cordoned := k.(cordoner); cordoned {
			if err := h.WriteAPI(ctx, "uncordon "+name, k.Says(OpUncordon, name)+" (untouched)", func(ctx context.Context) error {
				return k.Uncordon(ctx, name)
			}); err != nil {
				return err
			}
		}
		u.mu.Lock()
		u.left[h.Name()] = why
		u.mu.Unlock()
		return nil
	}
	if h.DryRun() {
		evict, err := k.Evictable(ctx, name, u.o.Drain)
		if err != nil {
			return err
		}
		return h.WriteAPI(ctx, "drain "+name, fmt.Sprintf("%s; %d move: %s", k.Says(OpDrain, name), len(evict), strings.Join(evict, ", ")), nil)
	}
	// Where the drain is what takes the node out (no cordon recorded it),
	// recorded first: a crash during the drain knows the node.
	if _, cordoned := k.(cordoner); !cordoned {
		if err := u.record(h.Name(), InProgress, ""); err != nil {
			return fmt.Errorf("rollout state: %w", err)
		}
	}
	w := &logWriter{h: h, prefix: PhaseDrain + ": "}
	err = h.WriteAPI(ctx, "drain "+name, k.Says(OpDrain, name), func(ctx context.Context) error {
		return k.Drain(ctx, name, u.o.Drain, w)
	})
	if err != nil {
		// Nothing changed on the host: the node goes back into service.
		if uerr := k.Uncordon(context.WithoutCancel(ctx), name); uerr == nil {
			h.Logf("%s: the drain failed; %s is schedulable again, untouched", PhaseDrain, name)
		}
		return err
	}
	return nil
}

// checkpoint runs each training workload's hook, if it has one.
func (p *drainPhase) checkpoint(ctx context.Context, h *engine.Host, training []Workload) error {
	k := p.u.client()
	for _, w := range training {
		if w.HookErr != nil {
			return w.HookErr
		}
		if w.Hook == nil {
			continue
		}
		what := fmt.Sprintf("%s: %s", w.Name, w.Hook.Describe())
		err := h.WriteAPI(ctx, "checkpoint "+w.Name, what, func(ctx context.Context) error {
			out, err := k.Checkpoint(ctx, h, w)
			for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
				if l != "" {
					h.Logf("%s: %s: %s", PhaseDrain, w.Name, l)
				}
			}
			if err != nil {
				// The workload's owner asked for a checkpoint; waiting for
				// the job (or leaving the node) is still safe.
				h.Logf("%s: checkpoint hook of %s: %v", PhaseDrain, w.Name, err)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// waitTraining waits up to --wait-for-jobs for the node's training to
// finish and returns what still runs.
func (p *drainPhase) waitTraining(ctx context.Context, h *engine.Host, name string) ([]Workload, error) {
	k := p.u.client()
	deadline := time.Now().Add(p.u.o.WaitForJobs)
	h.Logf("%s: waiting up to %s for the training on %s to finish", PhaseDrain, p.u.o.WaitForJobs, name)
	for {
		training, err := k.Training(ctx, name)
		if err != nil || len(training) == 0 || time.Now().After(deadline) {
			return training, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(min(p.u.poll(), time.Until(deadline)+time.Millisecond)):
		}
	}
}

// logWriter turns drain's lines into the host's log lines.
type logWriter struct {
	h      *engine.Host
	prefix string
}

func (w *logWriter) Write(b []byte) (int, error) {
	for _, l := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		w.h.Logf("%s%s", w.prefix, l)
	}
	return len(b), nil
}

// ---- upgrade/stop-gpu-consumers

type stopPhase struct{ u *Upgrade }

func (*stopPhase) Name() string { return PhaseStop }
func (*stopPhase) Title() string {
	return "Stop the host's GPU consumers (persistence daemon, fabric manager, DCGM)"
}

func (p *stopPhase) ShouldRun(_ context.Context, h *engine.Host) (bool, string, error) {
	p.u.mu.Lock()
	defer p.u.mu.Unlock()
	todo := p.u.pending[h.Name()]
	if slices.Contains(todo, nvidia.PhaseDriver) || slices.Contains(todo, nvidia.PhaseFabricManager) {
		return true, "", nil
	}
	return false, "the driver does not change", nil
}

func (p *stopPhase) Run(ctx context.Context, h *engine.Host) error {
	cmd, err := scripts.GPUConsumersStop(scripts.GPUConsumersStopParams{Units: scripts.GPUConsumerUnits, Force: p.u.o.Force})
	if err != nil {
		return err
	}
	_, err = h.Apply(ctx, "stop the GPU consumers", cmd)
	return err
}

// ---- upgrade/gpus

type gpusPhase struct{ u *Upgrade }

func (*gpusPhase) Name() string { return PhaseGPUs }
func (p *gpusPhase) Title() string {
	if p.u.o.KubeletVersion != "" {
		return "Wait for the node's new kubelet: Ready, its GPUs advertised again"
	}
	return "Wait for the node to advertise its GPUs again"
}

func (p *gpusPhase) Run(ctx context.Context, h *engine.Host) error {
	k, name := p.u.client(), p.u.node(h)
	// As many as the node advertised before the upgrade: a node whose
	// device plugin does not run (yet) is waited for until Ready only.
	p.u.mu.Lock()
	want := p.u.nodes[h.Name()].GPUs
	if p.u.o.ReadyOnly {
		want = 0
	}
	p.u.mu.Unlock()
	if dp, ok := k.(devicePluginRestarter); ok {
		if err := h.WriteAPI(ctx, "restart the device plugin on "+name, "delete the NVIDIA device plugin's pod on "+name+" (its DaemonSet starts it on the new driver)", func(ctx context.Context) error {
			n, err := dp.RestartDevicePlugin(ctx, name)
			h.Logf("%s: %d device plugin pods restarted on %s", PhaseGPUs, n, name)
			return err
		}); err != nil {
			return err
		}
	}
	if h.DryRun() {
		return nil
	}
	timeout := p.u.o.GPUTimeout
	if timeout <= 0 {
		timeout = 5 * time.Minute
	}
	if v := p.u.o.KubeletVersion; v != "" {
		// The new kubelet has posted its status: Ready and the GPUs
		// below are its own, not what the old one left.
		kw, ok := k.(kubeletWaiter)
		if !ok {
			return fmt.Errorf("%s cannot tell a node's kubelet version", PhaseGPUs)
		}
		if err := kw.WaitKubelet(ctx, name, v, timeout); err != nil {
			return fmt.Errorf("the node stays cordoned: %w", err)
		}
		h.Logf("%s: %s's kubelet reports %s", PhaseGPUs, name, v)
	}
	if err := k.WaitGPUs(ctx, name, want, timeout); err != nil {
		return fmt.Errorf("the node stays cordoned: %w", err)
	}
	h.Logf("%s: %s is Ready with at least %d GPUs advertised", PhaseGPUs, name, want)
	return nil
}

// ---- upgrade/uncordon

type uncordonPhase struct{ u *Upgrade }

func (*uncordonPhase) Name() string  { return PhaseUncordon }
func (*uncordonPhase) Title() string { return "Uncordon the node" }

func (p *uncordonPhase) Run(ctx context.Context, h *engine.Host) error {
	name, k := p.u.node(h), p.u.client()
	// The labels derived from the facts (driver, CUDA) follow the verified
	// GPUs.
	if h.Facts != nil {
		changes, apply, err := k.Relabel(ctx, name, h.Machine, h.Facts)
		if err != nil {
			return err
		}
		if len(changes) > 0 {
			if err := h.WriteAPI(ctx, "label "+name, "Node "+name+": "+strings.Join(changes, ", "), apply); err != nil {
				return err
			}
		}
	}
	if c, ok := k.(uncordonCaveater); ok {
		caveats, err := c.UncordonCaveats(ctx, name)
		if err != nil {
			return err
		}
		for _, c := range caveats {
			h.Logf("%s: warning: %s", PhaseUncordon, c)
		}
	}
	err := h.WriteAPI(ctx, "uncordon "+name, k.Says(OpUncordon, name), func(ctx context.Context) error {
		return k.Uncordon(ctx, name)
	})
	if err != nil {
		return err
	}
	if err := p.u.record(h.Name(), Done, ""); err != nil {
		return fmt.Errorf("rollout state: %w", err)
	}
	return nil
}
