package upgrade

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/swarmapi"
	"github.com/gpukit/gpukit/test/swarmsim"
)

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
	f := swarmsim.New(swarmsim.Options{})
	f.Nodes = []*swarmsim.Node{
		{ID: swarmID(1), Hostname: "m1", Addr: "10.0.0.1", Availability: "active", State: "ready", Labels: map[string]string{}},
		{ID: swarmID(9), Hostname: "gpu-1", Addr: "10.0.0.11", Availability: "active", State: "down", Labels: map[string]string{}},
		{ID: swarmID(2), Hostname: "gpu-1", Addr: "10.0.0.11", Availability: "active", State: "ready", GPUs: []string{"GPU-a", "GPU-b"},
			Labels: map[string]string{swarmapi.LabelGPUCount: "2"}},
		{ID: swarmID(3), Hostname: "renamed", Addr: "10.0.0.12", Availability: "pause", State: "ready", GPUs: []string{"GPU-c"}, Labels: map[string]string{}},
		{ID: swarmID(4), Hostname: "elsewhere", Addr: "10.0.0.99", Availability: "active", State: "ready", Labels: map[string]string{}},
	}
	f.Tasks = []*swarmsim.Task{
		{ID: "t1", Service: "serve", Mode: "replicated", Node: swarmID(2), State: "running", Slot: 1, GPUs: []string{"GPU-a"}},
		{ID: "t2", Service: "train", Mode: "replicated-job", Node: swarmID(2), State: "running", Slot: 1, GPUs: []string{"GPU-b"},
			Labels: map[string]string{AnnotationCheckpoint: "signal:USR1", AnnotationCheckpointTimeout: "30s"}},
		{ID: "t3", Service: "agent", Mode: "global", Node: swarmID(2), State: "running"},
		{ID: "t4", Service: "old", Mode: "replicated", Node: swarmID(2), State: "shutdown", Slot: 2},
		{ID: "t5", Service: "notebook", Mode: "replicated", Node: swarmID(3), State: "running", Slot: 1, GPUs: []string{"GPU-c"},
			Labels: map[string]string{AnnotationTraining: "true"}},
	}
	requests := 0
	s := &Swarm{Inventory: inv, Run: f.Remote("m1"), Poll: time.Millisecond, count: func() { requests++ }}

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
	if err == nil || !strings.Contains(err.Error(), "train.1") || f.Nodes[2].Availability != "active" || len(f.Updates) != 0 {
		t.Errorf("a drain with training on the node: %v (availability %s)", err, f.Nodes[2].Availability)
	}
	f.Tasks[1].State = "complete"
	var log bytes.Buffer
	if err := s.Drain(ctx, "gpu-1", DrainOptions{Timeout: time.Second}, &log); err != nil {
		t.Fatal(err)
	}
	if nodes, _ = s.Nodes(ctx); !slices.ContainsFunc(nodes, func(n Node) bool { return n.Name == "gpu-1" && n.Unschedulable && n.Ours }) {
		t.Errorf("gpu-1 after the drain: %+v", nodes)
	}
	if f.Nodes[2].Availability != "drain" || f.Nodes[2].Labels[LabelCordoned] == "" || !strings.Contains(log.String(), "task serve.1 shut down") || !strings.Contains(log.String(), "task agent."+swarmID(2)+" shut down") {
		t.Errorf("drain: %s, log:\n%s", f.Nodes[2].Availability, log.String())
	}
	if err := s.WaitGPUs(ctx, "gpu-1", 2, time.Second); err != nil {
		t.Error(err)
	}
	f.Nodes[2].GPUs = nil
	if err := s.WaitGPUs(ctx, "gpu-1", 2, 20*time.Millisecond); err == nil || !strings.Contains(err.Error(), "0 of 2 GPUs advertised") {
		t.Errorf("a node that lost its GPUs: %v", err)
	}
	if err := s.Uncordon(ctx, "gpu-1"); err != nil {
		t.Fatal(err)
	}
	if _, ok := f.Nodes[2].Labels[LabelCordoned]; ok || f.Nodes[2].Availability != "active" {
		t.Errorf("uncordon: %s %v", f.Nodes[2].Availability, f.Nodes[2].Labels)
	}
	// Given back already: nothing to change, no update.
	before := len(f.Updates)
	if err := s.Uncordon(ctx, "gpu-1"); err != nil || len(f.Updates) != before {
		t.Errorf("a second uncordon: %v, updates %v", err, f.Updates[before:])
	}
	if requests != f.Commands() {
		t.Errorf("%d requests counted, %d made", requests, f.Commands())
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
