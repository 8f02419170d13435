package swarmsim_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/scripts"
	"github.com/gpukit/gpukit/pkg/ssh"
	"github.com/gpukit/gpukit/pkg/swarmapi"
	"github.com/gpukit/gpukit/test/swarmsim"
)

// The rendered scripts form a swarm whose nodes and tasks parse as gpukit
// reads them: the GPUs a node advertises are its daemon.json's, a drained
// node's running tasks shut down, a missing label cannot be removed.
func TestSwarmAsGPUkitReadsIt(t *testing.T) {
	ctx := context.Background()
	sw := swarmsim.New(swarmsim.Options{GPUs: map[string][]string{"w1": {"GPU-a"}}, Driver: "580.95.05"})
	m1, w1 := sw.Remote("m1"), sw.Remote("w1")
	id := swarmsim.NodeID("w1")
	initSwarm, err1 := scripts.SwarmInit(scripts.SwarmAddrParams{AdvertiseAddr: "10.0.0.1", ListenAddr: "10.0.0.1:2377"})
	config, err2 := scripts.DockerConfig(scripts.BackupParams{BackupDir: "/var/lib/gpukit/swarm/originals"}, `{"node-generic-resources":["NVIDIA-GPU=GPU-a"]}`, "", "", "")
	join, err3 := scripts.SwarmJoin(scripts.SwarmAddrParams{AdvertiseAddr: "10.0.0.2", ListenAddr: "10.0.0.2:2377", Manager: "10.0.0.1:2377"}, sw.Token)
	listNodes, err4 := scripts.SwarmNodes()
	listTasks, err5 := scripts.SwarmNodeTasks(id)
	if err := errors.Join(err1, err2, err3, err4, err5); err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct {
		run engine.RemoteFunc
		cmd ssh.Command
	}{{m1, initSwarm}, {w1, config}, {w1, join}} {
		if _, err := step.run(ctx, step.cmd); err != nil {
			t.Fatalf("%s: %v", step.cmd.Name, err)
		}
	}
	res, err := m1(ctx, listNodes)
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := swarmapi.ParseNodes(res.Stdout)
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) != 2 || nodes[0].Hostname != "m1" || nodes[0].Manager != "leader" || nodes[0].Addr != "10.0.0.1" ||
		nodes[1].Role != "worker" || nodes[1].Addr != "10.0.0.2" || !slices.Equal(nodes[1].GPUs, []string{"GPU-a"}) {
		t.Errorf("nodes: %+v", nodes)
	}
	sw.Tasks = []*swarmsim.Task{{ID: "t1", Node: id, Service: "train", Mode: "replicated-job", State: "running", Slot: 1, GPUs: []string{"GPU-a"}}}
	update := func(opts ...string) error {
		cmd, err := scripts.SwarmNodeUpdate([]scripts.NodeUpdate{{ID: id, Options: opts}})
		if err == nil {
			_, err = m1(ctx, cmd)
		}
		return err
	}
	tasks := func() []swarmapi.Task {
		res, err := m1(ctx, listTasks)
		if err != nil {
			t.Fatal(err)
		}
		tasks, err := swarmapi.ParseTasks(res.Stdout)
		if err != nil {
			t.Fatal(err)
		}
		return tasks
	}
	if got := tasks(); len(got) != 1 || !got[0].RunningOnGPU() || got[0].Name() != "train.1" || got[0].Mode != "replicated-job" || !got[0].WantsGPU {
		t.Errorf("tasks: %+v", got)
	}
	if err := update("--availability", "drain", "--label-add", "k=v"); err != nil {
		t.Fatal(err)
	}
	if got := tasks(); len(got) != 0 || sw.Tasks[0].State != "shutdown" {
		t.Errorf("a drained node's tasks: %+v", got)
	}
	if err := update("--label-rm", "missing"); err == nil || !strings.Contains(err.Error(), "doesn't exist") {
		t.Errorf("removing a missing label: %v", err)
	}
	if n := sw.Node(id); n.Availability != "drain" || n.Labels["k"] != "v" || len(sw.Updates) != 1 || sw.Commands() != 8 {
		t.Errorf("node %+v, updates %v, %d commands", n, sw.Updates, sw.Commands())
	}
}
