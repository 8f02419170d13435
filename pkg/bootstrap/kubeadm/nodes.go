package kubeadm

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/kube"
	"github.com/gpukit/gpukit/pkg/scripts"
)

// PhaseNodes reads the cluster's nodes (status).
const PhaseNodes = "status/nodes"

// NodeStatus is one node of the cluster as the API lists it.
type NodeStatus struct {
	Name  string   `json:"name"`
	Roles []string `json:"roles,omitempty"`
	// Ready is the Ready condition's status (True, False, Unknown) and
	// Reason why not, when it is not.
	Ready   string `json:"ready"`
	Reason  string `json:"reason,omitempty"`
	Address string `json:"address,omitempty"`
	Kubelet string `json:"kubelet"`
	Runtime string `json:"runtime"`
	// GPUs is the allocatable nvidia.com/gpu ("" when the node advertises none).
	GPUs string `json:"gpus,omitempty"`
	// Resources are every allocatable nvidia.com/ resource but nvidia.com/gpu:
	// MIG devices (nvidia.com/mig-1g.10gb, MIG strategy mixed) and shared
	// GPUs (nvidia.com/gpu.shared, time-slicing or MPS renamed), by name.
	Resources map[string]string `json:"resources,omitempty"`
	// Labels are the GPU labels (nvidia.com/...) and the inventory's.
	Labels map[string]string `json:"labels,omitempty"`
	Taints []string          `json:"taints,omitempty"`
	// Unschedulable: cordoned (its GPUs take no new pods).
	Unschedulable bool `json:"unschedulable,omitempty"`
}

// listed is the part of `kubectl get nodes -o json` gpukit reads.
type listed struct {
	Items []struct {
		Metadata struct {
			Name   string
			Labels map[string]string
		}
		Spec struct {
			Unschedulable bool
			Taints        []struct{ Key, Value, Effect string }
		}
		Status struct {
			Allocatable map[string]string
			Conditions  []struct{ Type, Status, Reason, Message string }
			Addresses   []struct{ Type, Address string }
			NodeInfo    struct {
				KubeletVersion          string
				ContainerRuntimeVersion string
			}
		}
	}
}

// ParseNodes reads `kubectl get nodes -o json`, in the order of the nodes'
// names.
func ParseNodes(out []byte) ([]NodeStatus, error) {
	var l listed
	if err := json.Unmarshal(out, &l); err != nil {
		return nil, fmt.Errorf("kubectl get nodes: %w", err)
	}
	nodes := make([]NodeStatus, 0, len(l.Items))
	for _, it := range l.Items {
		n := NodeStatus{Name: it.Metadata.Name, Ready: "Unknown", Kubelet: it.Status.NodeInfo.KubeletVersion,
			Runtime: it.Status.NodeInfo.ContainerRuntimeVersion, GPUs: it.Status.Allocatable[kube.GPUResource], Labels: map[string]string{},
			Unschedulable: it.Spec.Unschedulable}
		for k, v := range it.Status.Allocatable {
			if strings.HasPrefix(k, "nvidia.com/") && k != kube.GPUResource && v != "0" {
				if n.Resources == nil {
					n.Resources = map[string]string{}
				}
				n.Resources[k] = v
			}
		}
		for k, v := range it.Metadata.Labels {
			if role, ok := strings.CutPrefix(k, "node-role.kubernetes.io/"); ok {
				n.Roles = append(n.Roles, role)
			}
			if strings.HasPrefix(k, "nvidia.com/") || strings.HasPrefix(k, "gpukit.dev/") {
				n.Labels[k] = v
			}
		}
		slices.Sort(n.Roles)
		for _, c := range it.Status.Conditions {
			if c.Type == "Ready" {
				n.Ready = c.Status
				if c.Status != "True" {
					n.Reason = strings.TrimSpace(c.Reason + ": " + c.Message)
				}
			}
		}
		for _, a := range it.Status.Addresses {
			if a.Type == "InternalIP" && n.Address == "" {
				n.Address = a.Address
			}
		}
		for _, t := range it.Spec.Taints {
			s := t.Key
			if t.Value != "" {
				s += "=" + t.Value
			}
			n.Taints = append(n.Taints, s+":"+t.Effect)
		}
		nodes = append(nodes, n)
	}
	slices.SortFunc(nodes, func(a, b NodeStatus) int { return strings.Compare(a.Name, b.Name) })
	return nodes, nil
}

// Nodes reads the cluster's nodes on the first control plane that answers
// (status).
func (l *Layer) Nodes() engine.Phase { return &nodesPhase{l} }

// ListedNodes are the nodes the status phase read (nil: none read).
func (l *Layer) ListedNodes() []NodeStatus {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.nodes
}

type nodesPhase struct{ l *Layer }

func (*nodesPhase) Name() string  { return PhaseNodes }
func (*nodesPhase) Title() string { return "Read the cluster's nodes" }

// Targets: the first control plane that answered.
func (p *nodesPhase) Targets(hosts []*engine.Host) []*engine.Host {
	return AnsweringControlPlane(hosts)
}

// AnsweringControlPlane targets the first control plane among hosts, the
// run's hosts that answered: a read-only command connects to every control
// plane, and any of them sees the whole cluster.
func AnsweringControlPlane(hosts []*engine.Host) []*engine.Host {
	for _, h := range hosts {
		if h.Machine.HasRole(inventory.RoleControlPlane) {
			return []*engine.Host{h}
		}
	}
	return nil
}

func (p *nodesPhase) Run(ctx context.Context, h *engine.Host) error {
	cmd, err := scripts.KubeNodesJSON()
	if err != nil {
		return err
	}
	res, err := h.Run(ctx, "read the cluster's nodes", cmd)
	if err != nil {
		return err
	}
	nodes, err := ParseNodes(res.Stdout)
	if err != nil {
		return err
	}
	p.l.mu.Lock()
	p.l.nodes = nodes
	p.l.mu.Unlock()
	return nil
}
