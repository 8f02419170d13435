package flow

import (
	"fmt"
	"slices"

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
	"github.com/gpukit/gpukit/pkg/swarmplatform"
)

// Status is `gpukit status`: the cluster's nodes as its control planes (or
// the swarm's managers) see them, and every host's GPUs as nvidia-smi and
// the kernel report them. It changes nothing.
type Status struct {
	Flow
	inv     *inventory.Inventory
	sw      *swarm.Layer
	swp     *swarmplatform.Platform // the swarm's platform
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

// StatusOptions are `gpukit status`'s choices that are not in the
// inventory.
type StatusOptions struct {
	// Hosts are the hosts whose GPUs are read (--hosts; none: every host).
	// The nodes are still listed by the control planes (managers), which
	// the run reaches whether named or not.
	Hosts []string
	// Kubeconfig reaches the API - the DCGM exporters' readings - from
	// this machine instead of through the first control plane
	// (--kubeconfig, --context; Kubernetes).
	Kubeconfig []byte
}

// NewStatus builds the flow for inv: the first control plane (manager)
// that answers lists the nodes, every host (o.Hosts) shows its GPUs.
func NewStatus(inv *inventory.Inventory, o StatusOptions) (*Status, error) {
	kubernetes := inv.Cluster.Spec.Orchestrator == inventory.Kubernetes
	asker, what := inventory.RoleManager, "manager"
	if kubernetes {
		asker, what = inventory.RoleControlPlane, "control plane"
	}
	if !slices.ContainsFunc(inv.Machines, func(m inventory.Machine) bool { return m.HasRole(asker) }) {
		return nil, fmt.Errorf("the inventory has no %s to ask", what)
	}
	if !kubernetes && o.Kubeconfig != nil {
		return nil, fmt.Errorf("--kubeconfig: spec.orchestrator is swarm; the swarm is reached through its first manager")
	}
	machines, scoped := inv.Machines, func(p engine.Phase) engine.Phase { return p }
	if len(o.Hosts) > 0 {
		if _, err := named(inv, o.Hosts, ""); err != nil {
			return nil, err
		}
		machines = slices.DeleteFunc(slices.Clone(inv.Machines), func(m inventory.Machine) bool {
			return !m.HasRole(asker) && !slices.Contains(o.Hosts, m.Name)
		})
		scoped = func(p engine.Phase) engine.Phase { return engine.Scoped{Phase: p, Hosts: o.Hosts} }
	}
	g := gpuhealth.NewStatus()
	if kubernetes {
		k := kubeadm.New(inv)
		var api kube.API = k
		if o.Kubeconfig != nil {
			api = &kube.Local{Kubeconfig: o.Kubeconfig}
		}
		d := dcgm.NewMetrics(api, kubeadm.AnsweringControlPlane, append([]dcgm.Source{{Namespace: kubeflow.MonitoringNamespace, DaemonSet: kubeflow.DCGMRelease}}, dcgm.OperatorSources...))
		return &Status{inv: inv, kube: k, gpus: g, metrics: d, Flow: Flow{
			Name:     "gpukit status",
			Machines: machines,
			Phases: []engine.Phase{
				k.Nodes(), // status/nodes        kubectl get nodes on the first control plane that answers
				scoped(g), // status/gpus         nvidia-smi -q -x and the kernel's XIDs on every host (--hosts: those)
				d,         // status/gpu-metrics  every dcgm-exporter's metrics through the API's pod proxy, when the monitoring runs
			},
		}}, nil
	}
	sw := swarm.New(inv)
	swp := swarmplatform.New(swarmplatform.SiteOf(inv), firstManager(inv))
	return &Status{inv: inv, sw: sw, swp: swp, gpus: g, Flow: Flow{
		Name:     "gpukit status",
		Machines: machines,
		Phases: []engine.Phase{
			sw.Nodes(),        // status/nodes     docker node inspect on the first manager that answers
			scoped(g),         // status/gpus      nvidia-smi -q -x and the kernel's XIDs on every host (--hosts: those)
			swp.StatusPhase(), // status/platform  the platform's services on the first manager, and its URLs
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
	platform := s.swp.ReadStatus()
	if platform != nil {
		problems = append(problems, platform.Problems()...)
	}
	return &SwarmStatus{Header: NewHeader(KindSwarmStatus), Healthy: len(problems) == 0, Problems: problems, Nodes: nodes, GPUs: gpus, Platform: platform}
}
