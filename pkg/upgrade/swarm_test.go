package upgrade

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/ssh"
	"github.com/gpukit/gpukit/pkg/swarmapi"
)

// fakeManager answers the Swarm orchestrator's scripts as a manager's
// docker would (recognised by their names): the nodes, `docker node
// update`, and the tasks on a node; a drain shuts a node's tasks down at the
// next look. The lab test (test/e2e) runs the same on real dockerd.
type fakeManager struct {
	mu      sync.Mutex
	nodes   []*fakeNode
	tasks   []*fakeTask
	updates []string // "ID opts..."
	runs    int
}

type fakeNode struct {
	id, host, addr, availability, state string
	gpus                                []string
	labels                              map[string]string
}

type fakeTask struct {
	id, service, mode, node, state string
	slot                           int
	gpus                           []string
	labels                         map[string]string
}

func (f *fakeManager) run(_ context.Context, cmd ssh.Command) (ssh.Result, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.runs++
	var out bytes.Buffer
	switch cmd.Name {
	case "read the swarm's nodes":
		var list []map[string]any
		for _, n := range f.nodes {
			if len(cmd.Args) > 0 && !slices.Contains(cmd.Args, n.id) {
				continue
			}
			var res []map[string]any
			for _, g := range n.gpus {
				res = append(res, map[string]any{"NamedResourceSpec": map[string]string{"Kind": swarmapi.GPUKind, "Value": g}})
			}
			list = append(list, map[string]any{"ID": n.id,
				"Spec":        map[string]any{"Role": "worker", "Availability": n.availability, "Labels": n.labels},
				"Description": map[string]any{"Hostname": n.host, "Resources": map[string]any{"GenericResources": res}},
				"Status":      map[string]any{"State": n.state, "Addr": n.addr}})
		}
		b, _ := json.Marshal(list)
		out.Write(b)
	case "update swarm nodes":
		args := cmd.Args
		for len(args) > 0 {
			id := args[0]
			n, _ := strconv.Atoi(args[1])
			opts := args[2 : 2+n]
			args = args[2+n:]
			f.updates = append(f.updates, id+" "+strings.Join(opts, " "))
			node := f.node(id)
			for i := 0; i+1 < len(opts); i += 2 {
				switch opts[i] {
				case "--availability":
					node.availability = opts[i+1]
				case "--label-add":
					k, v, _ := strings.Cut(opts[i+1], "=")
					node.labels[k] = v
				case "--label-rm":
					if _, ok := node.labels[opts[i+1]]; !ok {
						return ssh.Result{}, fmt.Errorf("key %s doesn't exist in node's labels", opts[i+1])
					}
					delete(node.labels, opts[i+1])
				}
			}
		}
	case "read the nodes' tasks":
		node := f.node(cmd.Args[0])
		services := map[string]*fakeTask{}
		for _, t := range f.tasks {
			if t.node != node.id {
				continue
			}
			if node.availability == "drain" && t.state == "running" {
				t.state = "shutdown" // seen at the next look, as a real drain
				continue
			}
			var assigned []map[string]any
			for _, g := range t.gpus {
				assigned = append(assigned, map[string]any{"NamedResourceSpec": map[string]string{"Kind": swarmapi.GPUKind, "Value": g}})
			}
			b, _ := json.Marshal(map[string]any{"ID": t.id, "ServiceID": "svc-" + t.service, "NodeID": t.node, "Slot": t.slot,
				"DesiredState": "running", "Status": map[string]any{"State": t.state, "ContainerStatus": map[string]string{"ContainerID": strings.Repeat("c", 64)}},
				"Spec": map[string]any{"ContainerSpec": map[string]any{"Labels": nil, "Env": nil}}, "GenericResources": assigned})
			fmt.Fprintf(&out, "task=%s\n", b)
			services[t.service] = t
		}
		for _, name := range slices.Sorted(maps.Keys(services)) {
			t := services[name]
			mode := map[string]string{"replicated": "Replicated", "global": "Global", "replicated-job": "ReplicatedJob"}[t.mode]
			b, _ := json.Marshal(map[string]any{"ID": "svc-" + name, "Spec": map[string]any{"Name": name, "Labels": t.labels, "Mode": map[string]any{mode: map[string]any{}}}})
			fmt.Fprintf(&out, "service=%s\n", b)
		}
	default:
		return ssh.Result{}, fmt.Errorf("the fake manager does not know %q", cmd.Name)
	}
	return ssh.Result{Stdout: out.Bytes()}, nil
}

func (f *fakeManager) node(id string) *fakeNode {
	for _, n := range f.nodes {
		if n.id == id {
			return n
		}
	}
	panic("no node " + id)
}

func swarmID(n int) string { return fmt.Sprintf("node%021d", n) }

// The swarm as the rollout sees it: nodes found by the inventory's
// addresses (the old, down node of a host that joined again left aside);
// no cordon apart from the drain; training told from serving by the
// service's mode and labels; a drain refused while training runs, without
// touching the node; then drained with gpukit's mark in one update, waited
// for until the tasks are gone; active again without the mark.
func TestSwarmOrchestrator(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	inv := &inventory.Inventory{Machines: []inventory.Machine{
		{Name: "m1", Address: "10.0.0.1"}, {Name: "gpu-1", Address: "10.0.0.11"}, {Name: "gpu-2", Address: "10.0.0.12"},
	}}
	f := &fakeManager{nodes: []*fakeNode{
		{id: swarmID(1), host: "m1", addr: "10.0.0.1", availability: "active", state: "ready", labels: map[string]string{}},
		{id: swarmID(9), host: "gpu-1", addr: "10.0.0.11", availability: "active", state: "down", labels: map[string]string{}},
		{id: swarmID(2), host: "gpu-1", addr: "10.0.0.11", availability: "active", state: "ready", gpus: []string{"GPU-a", "GPU-b"},
			labels: map[string]string{swarmapi.LabelGPUCount: "2"}},
		{id: swarmID(3), host: "renamed", addr: "10.0.0.12", availability: "pause", state: "ready", gpus: []string{"GPU-c"}, labels: map[string]string{}},
		{id: swarmID(4), host: "elsewhere", addr: "10.0.0.99", availability: "active", state: "ready", labels: map[string]string{}},
	}, tasks: []*fakeTask{
		{id: "t1", service: "serve", mode: "replicated", node: swarmID(2), state: "running", slot: 1, gpus: []string{"GPU-a"}},
		{id: "t2", service: "train", mode: "replicated-job", node: swarmID(2), state: "running", slot: 1, gpus: []string{"GPU-b"},
			labels: map[string]string{AnnotationCheckpoint: "signal:USR1", AnnotationCheckpointTimeout: "30s"}},
		{id: "t3", service: "agent", mode: "global", node: swarmID(2), state: "running"},
		{id: "t4", service: "old", mode: "replicated", node: swarmID(2), state: "shutdown", slot: 2},
		{id: "t5", service: "notebook", mode: "replicated", node: swarmID(3), state: "running", slot: 1, gpus: []string{"GPU-c"},
			labels: map[string]string{AnnotationTraining: "true"}},
	}}
	requests := 0
	s := &Swarm{Inventory: inv, Run: f.run, Poll: time.Millisecond, count: func() { requests++ }}

	nodes, err := s.Nodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Node{}
	for _, n := range nodes {
		got[n.Name] = n
	}
	if n := got["gpu-1"]; len(nodes) != 4 || !n.GPU || n.GPUs != 2 || n.Unschedulable || n.Ours {
		t.Errorf("gpu-1 (the live node, not the down one): %+v of %+v", n, nodes)
	}
	if n := got["gpu-2"]; !n.GPU || !n.Unschedulable || n.Ours {
		t.Errorf("gpu-2 (found by its address, paused by someone else): %+v", n)
	}
	if n := got["m1"]; n.GPU || got["elsewhere"].Name != "elsewhere" {
		t.Errorf("m1 %+v, a node of no inventory host %+v", n, got["elsewhere"])
	}

	if _, ok := Orchestrator(s).(cordoner); ok {
		t.Error("a swarm node is cordoned apart from its drain: given back, it would lose its GPU tasks")
	}
	training, err := s.Training(ctx, "gpu-1")
	if err != nil {
		t.Fatal(err)
	}
	if len(training) != 1 || training[0].Name != "train.1" || !strings.Contains(training[0].Why, "replicated-job service train") ||
		training[0].Hook == nil || training[0].Hook.Signal != "SIGUSR1" || training[0].Hook.Timeout != 30*time.Second {
		t.Errorf("training on gpu-1: %+v", training)
	}
	if w, err := s.Training(ctx, "gpu-2"); err != nil || len(w) != 1 || !strings.Contains(w[0].Why, "labelled gpukit.dev/training=true") {
		t.Errorf("training on gpu-2 (a replicated service labelled so): %+v %v", w, err)
	}
	if move, err := s.Evictable(ctx, "gpu-1", DrainOptions{}); err != nil || !slices.Equal(move, []string{"serve.1", "agent." + swarmID(2)}) {
		t.Errorf("a dry-run's drain of gpu-1: %v %v", move, err)
	}
	err = s.Drain(ctx, "gpu-1", DrainOptions{Timeout: time.Second}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "train.1") || f.nodes[2].availability != "active" || len(f.updates) != 0 {
		t.Errorf("a drain with training on the node: %v (availability %s)", err, f.nodes[2].availability)
	}
	f.tasks[1].state = "complete"
	var log bytes.Buffer
	if err := s.Drain(ctx, "gpu-1", DrainOptions{Timeout: time.Second}, &log); err != nil {
		t.Fatal(err)
	}
	if nodes, _ = s.Nodes(ctx); !slices.ContainsFunc(nodes, func(n Node) bool { return n.Name == "gpu-1" && n.Unschedulable && n.Ours }) {
		t.Errorf("gpu-1 after the drain: %+v", nodes)
	}
	if f.nodes[2].availability != "drain" || f.nodes[2].labels[LabelCordoned] == "" || !strings.Contains(log.String(), "task serve.1 shut down") || !strings.Contains(log.String(), "task agent."+swarmID(2)+" shut down") {
		t.Errorf("drain: %s, log:\n%s", f.nodes[2].availability, log.String())
	}
	if err := s.WaitGPUs(ctx, "gpu-1", 2, time.Second); err != nil {
		t.Error(err)
	}
	f.nodes[2].gpus = nil
	if err := s.WaitGPUs(ctx, "gpu-1", 2, 20*time.Millisecond); err == nil || !strings.Contains(err.Error(), "0 of 2 GPUs advertised") {
		t.Errorf("a node that lost its GPUs: %v", err)
	}
	if err := s.Uncordon(ctx, "gpu-1"); err != nil {
		t.Fatal(err)
	}
	if _, ok := f.nodes[2].labels[LabelCordoned]; ok || f.nodes[2].availability != "active" {
		t.Errorf("uncordon: %s %v", f.nodes[2].availability, f.nodes[2].labels)
	}
	// Given back already: nothing to change, no update.
	before := len(f.updates)
	if err := s.Uncordon(ctx, "gpu-1"); err != nil || len(f.updates) != before {
		t.Errorf("a second uncordon: %v, updates %v", err, f.updates[before:])
	}
	if requests != f.runs {
		t.Errorf("%d requests counted, %d made", requests, f.runs)
	}
}

// What a swarm task's service and container say decides whether it is
// training.
func TestTrainingTask(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		task swarmapi.Task
		want bool
	}{
		{"a GPU job", swarmapi.Task{Mode: "replicated-job", WantsGPU: true}, true},
		{"a global GPU job", swarmapi.Task{Mode: "global-job", WantsGPU: true}, true},
		{"a job without GPU", swarmapi.Task{Mode: "replicated-job"}, false},
		{"a GPU service", swarmapi.Task{Mode: "replicated", WantsGPU: true}, false},
		{"a service labelled training", swarmapi.Task{Mode: "replicated", Labels: map[string]string{AnnotationTraining: "true"}}, true},
		{"a GPU job labelled not training", swarmapi.Task{Mode: "replicated-job", WantsGPU: true, Labels: map[string]string{AnnotationTraining: "false"}}, false},
	} {
		if got, why := TrainingTask(tc.task); got != tc.want || (got && why == "") {
			t.Errorf("%s: %v (%q), want %v", tc.name, got, why, tc.want)
		}
	}
}
