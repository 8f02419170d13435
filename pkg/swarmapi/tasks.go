package swarmapi

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/gpukit/gpukit/pkg/facts"
)

// Task is one task of a node as a manager sees it (docker inspect --type
// task), with what gpukit reads of its service.
type Task struct {
	ID          string
	ServiceID   string
	ServiceName string
	// ServiceGone: its service was removed (swarm keeps some of a removed
	// job's tasks on their nodes; nothing runs them again).
	ServiceGone bool
	// Mode is the service's: replicated, global, replicated-job or
	// global-job.
	Mode         string
	Slot         int
	NodeID       string
	DesiredState string
	State        string
	ContainerID  string
	// GPUs are the NVIDIA-GPU resources the swarm assigned it (UUIDs).
	GPUs []string
	// WantsGPU: it reserves NVIDIA-GPU, or its container asks the NVIDIA
	// runtime for GPUs itself (NVIDIA_VISIBLE_DEVICES).
	WantsGPU bool
	// Labels are the service's, overridden by the container's.
	Labels map[string]string
}

// terminal are the task states a task never leaves.
var terminal = []string{"complete", "shutdown", "failed", "rejected", "remove", "orphaned"}

// Active says whether the task holds (or is about to hold) its node: not
// finished, and not told to go.
func (t Task) Active() bool { return !slices.Contains(terminal, t.State) }

// RunningOnGPU: a task that runs on GPUs the swarm assigned it, of a
// service that still exists. An update of its node makes swarm reject it
// and start it over; a removed service's task is rejected for good, as its
// owner wanted.
func (t Task) RunningOnGPU() bool { return t.Active() && len(t.GPUs) > 0 && !t.ServiceGone }

// FinishedJobOnGPU: a job's task that completed on GPUs the swarm assigned
// it. Swarm keeps it in its books as holding them, and rejects it, like a
// running one, when its node is updated (swarmkit's constraint enforcer):
// the job then runs that task again (unless its service is gone).
func (t Task) FinishedJobOnGPU() bool {
	return t.State == "complete" && t.DesiredState == "complete" && len(t.GPUs) > 0 && !t.ServiceGone
}

// Name is the task's name as docker service ps shows it: service.slot, or
// service.node for the tasks of global services and jobs (slot 0).
func (t Task) Name() string {
	if t.Slot > 0 {
		return fmt.Sprintf("%s.%d", t.ServiceName, t.Slot)
	}
	return t.ServiceName + "." + t.NodeID
}

type genericResource struct {
	NamedResourceSpec    *struct{ Kind, Value string }
	DiscreteResourceSpec *struct {
		Kind  string
		Value int64
	}
}

func (g genericResource) kind() string {
	switch {
	case g.NamedResourceSpec != nil:
		return g.NamedResourceSpec.Kind
	case g.DiscreteResourceSpec != nil:
		return g.DiscreteResourceSpec.Kind
	}
	return ""
}

// inspectedTask is the part of a task gpukit reads.
type inspectedTask struct {
	ID, ServiceID, NodeID, DesiredState string
	Slot                                int
	Spec                                struct {
		ContainerSpec *struct {
			Labels map[string]string
			Env    []string
		}
		Resources *struct {
			Reservations *struct{ GenericResources []genericResource }
		}
	}
	Status struct {
		State           string
		ContainerStatus *struct{ ContainerID string }
	}
	// GenericResources are those the swarm assigned the task.
	GenericResources []genericResource
}

// inspectedService is the part of a service gpukit reads.
type inspectedService struct {
	ID   string
	Spec struct {
		Name   string
		Labels map[string]string
		Mode   map[string]json.RawMessage
	}
}

// serviceModes are the service modes by their keys in a service's spec.
var serviceModes = map[string]string{"Replicated": "replicated", "Global": "global", "ReplicatedJob": "replicated-job", "GlobalJob": "global-job"}

// ParseTasks reads the output of scripts.SwarmNodeTasks: the node's tasks
// with their services' names, modes and labels, in docker's order.
func ParseTasks(out []byte) ([]Task, error) {
	var tasks []inspectedTask
	var services []inspectedService
	err := facts.ScanKV(out, "swarm tasks", func(key, value string) error {
		if value == "" { // an object removed while it was read
			return nil
		}
		switch key {
		case "task":
			var t inspectedTask
			if err := json.Unmarshal([]byte(value), &t); err != nil {
				return err
			}
			tasks = append(tasks, t)
		case "service":
			var s inspectedService
			if err := json.Unmarshal([]byte(value), &s); err != nil {
				return err
			}
			services = append(services, s)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	byID := map[string]inspectedService{}
	for _, s := range services {
		byID[s.ID] = s
	}
	out2 := make([]Task, 0, len(tasks))
	for _, r := range tasks {
		s, ok := byID[r.ServiceID]
		t := Task{ServiceGone: !ok, ID: r.ID, ServiceID: r.ServiceID, ServiceName: s.Spec.Name, Slot: r.Slot, NodeID: r.NodeID,
			DesiredState: r.DesiredState, State: r.Status.State, Labels: map[string]string{}}
		if t.ServiceName == "" {
			t.ServiceName = r.ServiceID // the service is gone
		}
		for k := range s.Spec.Mode {
			if m, ok := serviceModes[k]; ok {
				t.Mode = m
			}
		}
		for k, v := range s.Spec.Labels {
			t.Labels[k] = v
		}
		if cs := r.Status.ContainerStatus; cs != nil {
			t.ContainerID = cs.ContainerID
		}
		for _, g := range r.GenericResources {
			if g.NamedResourceSpec != nil && g.NamedResourceSpec.Kind == GPUKind {
				t.GPUs = append(t.GPUs, g.NamedResourceSpec.Value)
			}
		}
		if res := r.Spec.Resources; res != nil && res.Reservations != nil {
			for _, g := range res.Reservations.GenericResources {
				t.WantsGPU = t.WantsGPU || g.kind() == GPUKind
			}
		}
		if c := r.Spec.ContainerSpec; c != nil {
			for k, v := range c.Labels {
				t.Labels[k] = v
			}
			for _, e := range c.Env {
				if v, ok := strings.CutPrefix(e, "NVIDIA_VISIBLE_DEVICES="); ok && v != "" && v != "void" && v != "none" {
					t.WantsGPU = true
				}
			}
		}
		t.WantsGPU = t.WantsGPU || len(t.GPUs) > 0
		out2 = append(out2, t)
	}
	return out2, nil
}
