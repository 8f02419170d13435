package upgrade

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/facts"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/scripts"
	"github.com/gpukit/gpukit/pkg/ssh"
	"github.com/gpukit/gpukit/pkg/swarmapi"
)

// LabelCordoned is put on a swarm node gpukit drains for the upgrade (the
// time), as AnnotationCordoned on a Kubernetes node: only such a node is
// made active again by gpukit, and a resumed run knows the nodes a killed
// one left out of service. Reverse-DNS, as Docker asks of labels, and
// outside swarmapi.LabelPrefix, whose labels follow the facts.
const LabelCordoned = "dev.gpukit.upgrade-cordoned"

// Swarm does the upgrade's work on a swarm's nodes through the docker of
// its first manager (the only kind of node that can change the others),
// over that manager's SSH connection: `docker node update --availability
// drain` takes a node out (marked as gpukit's) and moves its tasks away,
// `active` gives it back. There is no separate cordon (see cordoner): a
// node whose training stays is never changed at all.
type Swarm struct {
	Inventory *inventory.Inventory
	// Run runs a command on the manager (engine.Host.Remote).
	Run engine.RemoteFunc
	// Poll is how often waits look again (default 2s).
	Poll time.Duration

	count func()
	mu    sync.Mutex
	ids   map[string]string // node name -> swarm node ID, as last listed
}

// SwarmConnect reaches the swarm through the first manager's docker, every
// command there counted as a request.
func SwarmConnect(inv *inventory.Inventory, poll time.Duration) Connect {
	return func(_ context.Context, h *engine.Host, count func()) (Orchestrator, error) {
		return &Swarm{Inventory: inv, Run: h.Remote(), Poll: poll, count: count}, nil
	}
}

func (s *Swarm) poll() time.Duration { return cmp.Or(s.Poll, 2*time.Second) }

func (s *Swarm) run(ctx context.Context, cmd ssh.Command, err error) (ssh.Result, error) {
	if err != nil {
		return ssh.Result{}, err
	}
	if s.count != nil {
		s.count()
	}
	return s.Run(ctx, cmd)
}

// NodeName is m's inventory name: Nodes finds each host's node by the
// address it advertised (the inventory's), or by its hostname.
func (s *Swarm) NodeName(m inventory.Machine) string { return m.Name }

// nodes lists the swarm's nodes (ids; none: all), each named after its
// inventory host.
func (s *Swarm) nodes(ctx context.Context, ids ...string) ([]swarmapi.Node, error) {
	cmd, err := scripts.SwarmNodes(ids...)
	res, err := s.run(ctx, cmd, err)
	if err != nil {
		return nil, fmt.Errorf("read the swarm's nodes: %w", err)
	}
	list, err := swarmapi.ParseNodes(res.Stdout)
	if err != nil {
		return nil, err
	}
	// A host that left and joined again leaves its old node behind, down:
	// the live one is the host's.
	slices.SortStableFunc(list, func(a, b swarmapi.Node) int {
		return cmp.Compare(btoi(a.State == "down"), btoi(b.State == "down"))
	})
	byAddr := s.addresses()
	seen := map[string]bool{}
	var out []swarmapi.Node
	for _, n := range list {
		name := n.Hostname
		if a, err := netip.ParseAddr(n.Addr); err == nil && byAddr[a.Unmap()] != "" {
			name = byAddr[a.Unmap()]
		}
		if seen[name] {
			continue
		}
		seen[name] = true
		n.Hostname = name
		out = append(out, n)
	}
	s.mu.Lock()
	if s.ids == nil {
		s.ids = map[string]string{}
	}
	for _, n := range out {
		s.ids[n.Hostname] = n.ID
	}
	s.mu.Unlock()
	return out, nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// addresses are the inventory's hosts by address: a node is its host's
// when it advertised the host's address (else by its hostname).
func (s *Swarm) addresses() map[netip.Addr]string {
	out := map[netip.Addr]string{}
	for _, m := range s.Inventory.Machines {
		// the address it advertised (a multi-NIC host's node address), and
		// the SSH address too
		for _, addr := range []string{m.NodeIP(), m.Address} {
			if a, err := netip.ParseAddr(addr); err == nil {
				out[a.Unmap()] = m.Name
			}
		}
	}
	return out
}

// Nodes lists the nodes as the rollout sees them: paused or drained ones
// take no new tasks.
func (s *Swarm) Nodes(ctx context.Context) ([]Node, error) {
	list, err := s.nodes(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Node, len(list))
	for i, n := range list {
		_, ours := n.Labels[LabelCordoned]
		out[i] = Node{Name: n.Hostname, GPU: len(n.GPUs) > 0 || n.Labels[swarmapi.LabelGPUCount] != "", GPUs: int64(len(n.GPUs)),
			Unschedulable: n.Availability != "active", Ours: ours && n.Availability != "active", Labels: n.Labels}
	}
	return out, nil
}

// node is the current state of the named node: only it is read, once its
// ID is known (a wave's waits poll each of its nodes).
func (s *Swarm) node(ctx context.Context, name string) (swarmapi.Node, error) {
	s.mu.Lock()
	id, ok := s.ids[name]
	s.mu.Unlock()
	var ids []string
	if ok {
		ids = []string{id}
	}
	list, err := s.nodes(ctx, ids...)
	if err != nil {
		return swarmapi.Node{}, err
	}
	for _, n := range list {
		if n.Hostname == name {
			return n, nil
		}
	}
	return swarmapi.Node{}, fmt.Errorf("%s is not a node of the swarm", name)
}

// id is the named node's swarm ID.
func (s *Swarm) id(ctx context.Context, name string) (string, error) {
	s.mu.Lock()
	id, ok := s.ids[name]
	s.mu.Unlock()
	if ok {
		return id, nil
	}
	n, err := s.node(ctx, name)
	return n.ID, err
}

// update runs `docker node update` with opts on the named node.
func (s *Swarm) update(ctx context.Context, name string, opts ...string) error {
	id, err := s.id(ctx, name)
	if err != nil {
		return err
	}
	cmd, err := scripts.SwarmNodeUpdate([]scripts.NodeUpdate{{ID: id, Options: opts}})
	if _, err := s.run(ctx, cmd, err); err != nil {
		return fmt.Errorf("docker node update %s %s: %w", strings.Join(opts, " "), name, err)
	}
	return nil
}

// Uncordon makes the node active again (its global services' tasks come
// back, and pending tasks may land on it) and drops gpukit's mark; a node
// that is active and unmarked is left as it is.
func (s *Swarm) Uncordon(ctx context.Context, name string) error {
	n, err := s.node(ctx, name)
	if err != nil {
		return err
	}
	var opts []string
	if n.Availability != "active" {
		opts = append(opts, "--availability", "active")
	}
	if _, ok := n.Labels[LabelCordoned]; ok {
		opts = append(opts, "--label-rm", LabelCordoned)
	}
	if len(opts) == 0 {
		return nil
	}
	return s.update(ctx, name, opts...)
}

// tasks are the node's tasks that hold it (not finished, not gone).
func (s *Swarm) tasks(ctx context.Context, name string) ([]swarmapi.Task, error) {
	all, err := s.booked(ctx, name)
	if err != nil {
		return nil, err
	}
	var out []swarmapi.Task
	for _, t := range all {
		if t.Active() {
			out = append(out, t)
		}
	}
	return out, nil
}

// UncordonCaveats names the finished GPU jobs that giving the node back
// runs again (see swarmapi.Task.FinishedJobOnGPU): nothing gpukit can spare
// them, but their owners should know why.
func (s *Swarm) UncordonCaveats(ctx context.Context, name string) ([]string, error) {
	all, err := s.booked(ctx, name)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, t := range all {
		if t.FinishedJobOnGPU() {
			out = append(out, fmt.Sprintf("the finished GPU job task %s runs again once %s is active: swarm rejects the tasks it books on a node's GPUs whenever the node is updated (swarmkit's constraint enforcer), and a job runs a rejected task again", t.Name(), name))
		}
	}
	return out, nil
}

// booked are the tasks the swarm books on the node: those that hold it,
// and finished jobs' (the script leaves out the rest of the history).
func (s *Swarm) booked(ctx context.Context, name string) ([]swarmapi.Task, error) {
	id, err := s.id(ctx, name)
	if err != nil {
		return nil, err
	}
	cmd, err := scripts.SwarmNodeTasks(id)
	res, err := s.run(ctx, cmd, err)
	if err != nil {
		return nil, fmt.Errorf("list the tasks on %s: %w", name, err)
	}
	return swarmapi.ParseTasks(res.Stdout)
}

// TrainingTask says whether t looks like training, and why: a task that
// uses a GPU of a job service (replicated-job, global-job), or is labelled
// gpukit.dev/training=true by its service or container.
func TrainingTask(t swarmapi.Task) (bool, string) {
	switch t.Labels[AnnotationTraining] {
	case "true":
		return true, "labelled " + AnnotationTraining + "=true"
	case "false":
		return false, ""
	}
	if t.WantsGPU && strings.HasSuffix(t.Mode, "-job") {
		return true, fmt.Sprintf("uses a GPU, a task of the %s service %s", t.Mode, t.ServiceName)
	}
	return false, ""
}

// Training are the node's training tasks, with their hooks (the service's
// or container's labels gpukit.dev/checkpoint and -timeout).
func (s *Swarm) Training(ctx context.Context, name string) ([]Workload, error) {
	tasks, err := s.tasks(ctx, name)
	if err != nil {
		return nil, err
	}
	var out []Workload
	for _, t := range tasks {
		if ok, why := TrainingTask(t); ok {
			w := Workload{Name: t.Name(), Why: why, ref: t}
			w.Hook, w.HookErr = parseHook(t.Labels)
			if w.HookErr != nil {
				w.HookErr = fmt.Errorf("service %s: %w", t.ServiceName, w.HookErr)
			}
			out = append(out, w)
		}
	}
	return out, nil
}

// Checkpoint runs the hook on the task's node: docker kill --signal, or
// docker exec within the hook's timeout.
func (s *Swarm) Checkpoint(ctx context.Context, on *engine.Host, w Workload) (string, error) {
	t, ok := w.ref.(swarmapi.Task)
	if !ok || w.Hook == nil {
		return "", fmt.Errorf("%s has no checkpoint hook", w.Name)
	}
	if t.ContainerID == "" {
		return "", fmt.Errorf("%s has no container yet", w.Name)
	}
	cmd, err := scripts.DockerCheckpoint(scripts.DockerCheckpointParams{Container: t.ContainerID, Signal: w.Hook.Signal, Command: w.Hook.Command, Timeout: w.Hook.Timeout})
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, w.Hook.Timeout+10*time.Second)
	defer cancel()
	res, err := on.Remote()(ctx, cmd)
	return string(res.Stdout) + string(res.Stderr), err
}

// movable are the node's tasks a drain moves, by name.
func (s *Swarm) movable(ctx context.Context, name string, force bool) ([]string, []string, error) {
	tasks, err := s.tasks(ctx, name)
	if err != nil {
		return nil, nil, err
	}
	var move, training []string
	for _, t := range tasks {
		if ok, why := TrainingTask(t); ok && !force {
			training = append(training, t.Name()+" ("+why+")")
			continue
		}
		move = append(move, t.Name())
	}
	return move, training, nil
}

// Evictable names the tasks Drain would shut down here (their services
// start them elsewhere; a global service's come back when the node is
// active again).
func (s *Swarm) Evictable(ctx context.Context, name string, o DrainOptions) ([]string, error) {
	move, _, err := s.movable(ctx, name, o.Force)
	return move, err
}

// Drain sets the node's availability to drain and waits, up to o.Timeout,
// until none of its tasks runs. Training is refused unless o.Force: the
// upgrade deals with it before. A service's own stop grace period applies
// (swarm has no per-drain one).
func (s *Swarm) Drain(ctx context.Context, name string, o DrainOptions, log io.Writer) error {
	move, training, err := s.movable(ctx, name, o.Force)
	if err != nil {
		return err
	}
	if len(training) > 0 {
		return fmt.Errorf("drain %s: training (%s): not moved without --force", name, strings.Join(training, ", "))
	}
	// Out of service and marked in one update: the mark tells a resumed
	// run the node is gpukit's.
	if err := s.update(ctx, name, "--availability", "drain", "--label-add", LabelCordoned+"="+time.Now().UTC().Format(time.RFC3339)); err != nil {
		return err
	}
	timeout := cmp.Or(o.Timeout, 10*time.Minute)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	running := map[string]bool{}
	for _, n := range move {
		running[n] = true
	}
	for {
		tasks, err := s.tasks(ctx, name)
		if err == nil {
			now := map[string]bool{}
			for _, t := range tasks {
				now[t.Name()] = true
			}
			for n := range running {
				if !now[n] {
					fmt.Fprintf(log, "task %s shut down\n", n)
				}
			}
			running = now
			if len(tasks) == 0 {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				names := slices.Sorted(func(yield func(string) bool) {
					for n := range running {
						if !yield(n) {
							return
						}
					}
				})
				return fmt.Errorf("drain %s: tasks still running after %s: %s", name, timeout, strings.Join(names, ", "))
			}
			return ctx.Err()
		case <-time.After(s.poll()):
		}
	}
}

// WaitGPUs waits until the node is ready and advertises want GPUs (its
// engine read them from daemon.json when it started).
func (s *Swarm) WaitGPUs(ctx context.Context, name string, want int64, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	last := ""
	for {
		n, err := s.node(ctx, name)
		switch {
		case err != nil:
			last = err.Error()
		case n.State != "ready":
			last = "the node is " + n.State
		case int64(len(n.GPUs)) < want:
			last = fmt.Sprintf("%d of %d GPUs advertised", len(n.GPUs), want)
		default:
			return nil
		}
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf("%s: not back after %s: %s", name, timeout, last)
			}
			return ctx.Err()
		case <-time.After(s.poll()):
		}
	}
}

// Says what op does, as the docker commands on the manager.
func (s *Swarm) Says(op Op, node string) string {
	switch op {
	case OpDrain:
		return "docker node update --availability drain --label-add " + LabelCordoned + "=<now> " + node + ", then wait until none of its tasks runs"
	case OpUncordon:
		return "docker node update --availability active --label-rm " + LabelCordoned + " " + node
	}
	return "nothing: the drain takes " + node + " out of service"
}

// Relabel updates gpukit's node labels (driver, CUDA, GPUs) to the verified
// facts, as swarm/labels does.
func (s *Swarm) Relabel(ctx context.Context, name string, m inventory.Machine, f *facts.Facts) ([]string, func(context.Context) error, error) {
	n, err := s.node(ctx, name)
	if err != nil {
		return nil, nil, err
	}
	opts := swarmapi.LabelOptions(n.Labels, swarmapi.NodeLabels(m, f))
	var changes []string
	for i := 0; i+1 < len(opts); i += 2 {
		changes = append(changes, opts[i]+" "+opts[i+1])
	}
	return changes, func(ctx context.Context) error { return s.update(ctx, name, opts...) }, nil
}
