package swarmapi_test

import (
	"os"
	"strings"
	"testing"

	"github.com/gpukit/gpukit/pkg/swarmapi"
)

// A real node's tasks (testdata/node-tasks.txt: scripts.SwarmNodeTasks run
// on a lab manager, Debian 12's docker.io 20.10.24): a replicated-job
// reserving a GPU with a checkpoint label, and a global service's task.
func TestParseTasks(t *testing.T) {
	t.Parallel()
	out, err := os.ReadFile("testdata/node-tasks.txt")
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := swarmapi.ParseTasks(out)
	if err != nil {
		t.Fatal(err)
	}
	byService := map[string]swarmapi.Task{}
	for _, task := range tasks {
		byService[task.ServiceName] = task
	}
	train, agent := byService["train"], byService["agent"]
	if len(tasks) != 2 || train.Mode != "replicated-job" || !train.WantsGPU || len(train.GPUs) != 1 || train.Labels["gpukit.dev/checkpoint"] != "signal:SIGUSR1" ||
		len(train.ContainerID) != 64 || !train.Active() || train.Name() != "train."+train.NodeID {
		t.Errorf("train: %+v", train)
	}
	if agent.Mode != "global" || agent.WantsGPU || agent.State != "running" || agent.Name() != "agent."+agent.NodeID {
		t.Errorf("agent: %+v", agent)
	}
	if tasks, err := swarmapi.ParseTasks(nil); err != nil || len(tasks) != 0 {
		t.Errorf("no tasks: %v %v", tasks, err)
	}
	if train.ServiceGone || agent.ServiceGone {
		t.Errorf("services gone: train %v, agent %v", train.ServiceGone, agent.ServiceGone)
	}
	// A service removed between the listing and its inspection: an empty
	// line, and its tasks' service gone.
	var kept []byte
	for _, line := range strings.SplitAfter(string(out), "\n") {
		if !strings.Contains(line, `"Name":"train"`) {
			kept = append(kept, line...)
		}
	}
	tasks, err = swarmapi.ParseTasks(append(kept, "service=\n"...))
	if err != nil || len(tasks) != 2 {
		t.Fatalf("with a removed service's empty line: %d tasks, %v", len(tasks), err)
	}
	for _, task := range tasks {
		if task.ServiceGone != (task.ServiceID == train.ServiceID) {
			t.Errorf("%s: service gone %v", task.Name(), task.ServiceGone)
		}
		if task.RunningOnGPU() { // train's service is gone: nothing restarts it
			t.Errorf("%s holds its node's GPUs", task.Name())
		}
	}
	if !train.RunningOnGPU() || agent.RunningOnGPU() || train.FinishedJobOnGPU() {
		t.Errorf("holding GPUs: train %v (finished %v), agent %v", train.RunningOnGPU(), train.FinishedJobOnGPU(), agent.RunningOnGPU())
	}
	if _, err := swarmapi.ParseTasks([]byte("task={\n")); err == nil {
		t.Error("a broken line parsed")
	}
}
