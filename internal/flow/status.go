package flow

import (
	"fmt"

	"github.com/gpukit/gpukit/pkg/bootstrap/kubeadm"
	"github.com/gpukit/gpukit/pkg/bootstrap/swarm"
	"github.com/gpukit/gpukit/pkg/dcgm"
	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/facts"
	"github.com/gpukit/gpukit/pkg/gpuhealth"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/kube"
	"github.com/gpukit/gpukit/pkg/kubeflow"
	"github.com/gpukit/gpukit/pkg/swarmapi"
)

// Status is `gpukit status`: the cluster's nodes as its control planes (or
// the swarm's managers) see them, and every host's GPUs as nvidia-smi and
// the kernel report them. It changes nothing.
type Status struct {
	Flow
	inv     *inventory.Inventory
	sw      *swarm.Layer
	kube    *kubeadm.Layer
	gpus    *gpuhealth.Status
	metrics *dcgm.Metrics // Kubernetes: the DCGM exporters'
}

// GPUs are the hosts' GPUs the run read, in inventory order (hosts without
// nvidia-smi left out), with the DCGM exporters' readings of their nodes.
func (s *Status) GPUs() []gpuhealth.HostGPUs {
	names := make([]string, len(s.Machines))
	for i, m := range s.Machines {
		names[i] = m.Name
	}
	hosts := s.gpus.Hosts(names)
	if s.metrics == nil {
		return hosts
	}
	byName := map[string]inventory.Machine{}
	for _, m := range s.Machines {
		byName[m.Name] = m
	}
	for i := range hosts {
		hosts[i].AddDCGM(s.metrics.Node(kube.NodeName(byName[hosts[i].Host])))
	}
	return hosts
}

// Unanswered names the DCGM exporters that run but did not answer.
func (s *Status) Unanswered() []string {
	if s.metrics == nil {
		return nil
	}
	return s.metrics.Unanswered()
}

// NewStatus builds the flow for inv: the first control plane (manager)
// that answers lists the nodes, every host shows its GPUs.
func NewStatus(inv *inventory.Inventory) (*Status, error) {
	if inv.Cluster.Spec.Orchestrator == inventory.Kubernetes {
		var cps []inventory.Machine
		for _, m := range inv.Machines {
			if m.HasRole(inventory.RoleControlPlane) {
				cps = append(cps, m)
			}
		}
		if len(cps) == 0 {
			return nil, fmt.Errorf("the inventory has no control plane to ask")
		}
		k, g := kubeadm.New(inv), gpuhealth.NewStatus()
		d := dcgm.NewMetrics(k, kubeadm.AnsweringControlPlane, append([]dcgm.Source{{Namespace: kubeflow.MonitoringNamespace, DaemonSet: kubeflow.DCGMRelease}}, dcgm.OperatorSources...))
		return &Status{inv: inv, kube: k, gpus: g, metrics: d, Flow: Flow{
			Name:     "gpukit status",
			Machines: inv.Machines,
			Phases: []engine.Phase{
				k.Nodes(), // status/nodes        kubectl get nodes on the first control plane that answers
				g,         // status/gpus         nvidia-smi -q -x and the kernel's XIDs on every host
				d,         // status/gpu-metrics  every dcgm-exporter's metrics through the API's pod proxy, when the monitoring runs
			},
		}}, nil
	}
	var managers []inventory.Machine
	for _, m := range inv.Machines {
		if m.HasRole(inventory.RoleManager) {
			managers = append(managers, m)
		}
	}
	if len(managers) == 0 {
		return nil, fmt.Errorf("the inventory has no manager to ask")
	}
	sw, g := swarm.New(inv), gpuhealth.NewStatus()
	return &Status{inv: inv, sw: sw, gpus: g, Flow: Flow{
		Name:     "gpukit status",
		Machines: inv.Machines,
		Phases: []engine.Phase{
			sw.Nodes(), // status/nodes  docker node inspect on the first manager that answers
			g,          // status/gpus   nvidia-smi -q -x and the kernel's XIDs on every host
		},
	}}, nil
}

// Nodes are the swarm's nodes the run read (nil for Kubernetes, or when no
// manager answered).
func (s *Status) Nodes() []swarmapi.Node {
	if s.sw == nil {
		return nil
	}
	return s.sw.ListedNodes()
}

// KubeNodes are the Kubernetes nodes the run read (nil for a swarm, or when
// no control plane answered).
func (s *Status) KubeNodes() []kubeadm.NodeStatus {
	if s.kube == nil {
		return nil
	}
	return s.kube.ListedNodes()
}

// Result is the run's verdict: every node and host with their GPUs, and what
// is unhealthy (a host that did not answer, a node not Ready, a GPU failing
// its health check). Nil when no control plane (manager) answered: there
// are no nodes to show, and the run's failures say why.
func (s *Status) Result(sum *engine.Summary) Result {
	gpus := s.GPUs()
	var problems []string
	for _, h := range sum.Failed() {
		problems = append(problems, h.Host+" did not answer")
	}
	for _, g := range gpus {
		if g.Status == facts.HealthFail {
			problems = append(problems, g.Host+"'s GPUs fail their health check")
		}
	}
	if kn := s.KubeNodes(); kn != nil {
		for _, n := range kn {
			if n.Ready != "True" {
				problems = append(problems, "node "+n.Name+" is not Ready")
			}
		}
		return &KubernetesStatus{Header: NewHeader(KindKubernetesStatus), Healthy: len(problems) == 0, Problems: problems,
			Nodes: kn, GPUs: gpus, Unanswered: s.Unanswered()}
	}
	nodes := s.Nodes()
	if nodes == nil {
		return nil
	}
	for _, n := range nodes {
		if n.State != "ready" {
			problems = append(problems, "node "+n.Hostname+" is "+n.State)
		}
	}
	return &SwarmStatus{Header: NewHeader(KindSwarmStatus), Healthy: len(problems) == 0, Problems: problems, Nodes: nodes, GPUs: gpus}
}
