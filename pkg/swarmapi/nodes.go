// Package swarmapi reads a swarm as a manager's docker answers: its nodes (docker
// node inspect), their tasks (docker inspect), and the labels gpukit gives
// its nodes from their facts. The swarm installer and the rollout share it,
// as they share pkg/kube on Kubernetes.
package swarmapi

import (
	"encoding/json"
	"fmt"
	"net"
	"slices"
	"strings"
)

// GPUKind is the generic resource kind under which nodes advertise their
// GPUs and services reserve them (docker service create --generic-resource
// NVIDIA-GPU=1).
const GPUKind = "NVIDIA-GPU"

// Node is one node of the swarm as a manager sees it (docker node inspect).
type Node struct {
	ID           string            `json:"id"`
	Hostname     string            `json:"hostname"`
	Role         string            `json:"role"`
	Availability string            `json:"availability"`
	State        string            `json:"state"`
	Addr         string            `json:"addr,omitempty"`
	Manager      string            `json:"manager,omitempty"` // leader, reachable, unreachable; "" for workers
	Engine       string            `json:"engine,omitempty"`
	Labels       map[string]string `json:"labels,omitempty"`
	// GPUs are the node's advertised NVIDIA-GPU resources (UUIDs).
	GPUs []string `json:"gpus,omitempty"`
	// Resources are its other generic resources, as KIND=VALUE.
	Resources []string `json:"resources,omitempty"`
}

// inspected is the part of `docker node inspect` gpukit reads.
type inspected struct {
	ID   string
	Spec struct {
		Role         string
		Availability string
		Labels       map[string]string
	}
	Description struct {
		Hostname  string
		Engine    struct{ EngineVersion string }
		Resources struct {
			GenericResources []struct {
				NamedResourceSpec    *struct{ Kind, Value string }
				DiscreteResourceSpec *struct {
					Kind  string
					Value int64
				}
			}
		}
	}
	Status struct {
		State string
		Addr  string
	}
	ManagerStatus *struct {
		Leader       bool
		Reachability string
		Addr         string
	}
}

// ParseNodes reads `docker node inspect` output (a JSON array), in the
// order of the nodes' hostnames.
func ParseNodes(out []byte) ([]Node, error) {
	var raw []inspected
	if err := json.Unmarshal(out, &raw); err != nil {
		return nil, fmt.Errorf("docker node inspect: %w", err)
	}
	nodes := make([]Node, 0, len(raw))
	for _, r := range raw {
		n := Node{
			ID: r.ID, Hostname: r.Description.Hostname, Role: r.Spec.Role, Availability: r.Spec.Availability,
			State: r.Status.State, Addr: r.Status.Addr, Engine: r.Description.Engine.EngineVersion, Labels: r.Spec.Labels,
		}
		if r.ManagerStatus != nil {
			// A leader may show 0.0.0.0 as its own address; its raft
			// address (host:port) is the one it advertised.
			if host, _, err := net.SplitHostPort(r.ManagerStatus.Addr); err == nil && (n.Addr == "" || n.Addr == "0.0.0.0") {
				n.Addr = host
			}
			n.Manager = r.ManagerStatus.Reachability
			if r.ManagerStatus.Leader {
				n.Manager = "leader"
			}
		}
		for _, g := range r.Description.Resources.GenericResources {
			switch {
			case g.NamedResourceSpec != nil && g.NamedResourceSpec.Kind == GPUKind:
				n.GPUs = append(n.GPUs, g.NamedResourceSpec.Value)
			case g.NamedResourceSpec != nil:
				n.Resources = append(n.Resources, g.NamedResourceSpec.Kind+"="+g.NamedResourceSpec.Value)
			case g.DiscreteResourceSpec != nil:
				n.Resources = append(n.Resources, fmt.Sprintf("%s=%d", g.DiscreteResourceSpec.Kind, g.DiscreteResourceSpec.Value))
			}
		}
		slices.Sort(n.GPUs)
		nodes = append(nodes, n)
	}
	slices.SortStableFunc(nodes, func(a, b Node) int { return strings.Compare(a.Hostname, b.Hostname) })
	return nodes, nil
}
