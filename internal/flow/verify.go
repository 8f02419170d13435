package flow

import (
	"fmt"
	"slices"

	"github.com/gpukit/gpukit/pkg/acceptance"
	"github.com/gpukit/gpukit/pkg/bootstrap/kubeadm"
	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/kube"
	"github.com/gpukit/gpukit/pkg/preflight"
	"github.com/gpukit/gpukit/pkg/probe"
	"github.com/gpukit/gpukit/pkg/verify"
)

// VerifyOptions are `gpukit verify`'s choices.
type VerifyOptions struct {
	Verify verify.Options
	// TaintFailed taints the nodes that fail (Kubernetes).
	TaintFailed bool
	// Kubeconfig reaches the API from this machine (--kubeconfig).
	Kubeconfig []byte
	// Hosts are the hosts to verify (--hosts; none: every host).
	Hosts []string
}

// Verify is `gpukit verify`: the acceptance tests of the GPU nodes.
type Verify struct {
	Flow
	Verify *verify.Verify
}

// NewVerify builds the flow: the facts, DCGM's diagnostic and NCCL's
// bandwidth on every GPU host (--hosts: those), the test across nodes, and
// with --taint-failed the failed nodes tainted from the first control
// plane.
func NewVerify(inv *inventory.Inventory, o VerifyOptions) (*Verify, error) {
	o.Verify.Facts = probe.Ensure
	machines := inv.Machines
	if len(o.Hosts) > 0 {
		named, err := named(inv, o.Hosts, "")
		if err != nil {
			return nil, err
		}
		machines = named
	}
	if o.TaintFailed {
		if inv.Cluster.Spec.Orchestrator != inventory.Kubernetes {
			return nil, fmt.Errorf("--taint-failed: spec.orchestrator is swarm; taints are Kubernetes' (drain a failed swarm node with docker node update --availability drain)")
		}
		first, ok := kubeadm.FirstControlPlane(inv)
		if !ok {
			return nil, fmt.Errorf("--taint-failed: the inventory has no control plane to reach the cluster through")
		}
		var api kube.API = kubeadm.New(inv)
		if o.Kubeconfig != nil {
			api = &kube.Local{Kubeconfig: o.Kubeconfig}
		}
		o.Verify.Taint, o.Verify.Target = api, hostTarget(first, true)
		if !slices.ContainsFunc(machines, func(m inventory.Machine) bool { return m.Name == first.Name }) {
			machines = append([]inventory.Machine{first}, machines...)
		}
	}
	v := verify.New(inv, o.Verify)
	// The facts, then the tests: `gpukit verify --list-phases` prints them.
	phases := append([]engine.Phase{preflight.New(inv).Facts()}, v.Phases()...)
	return &Verify{Verify: v, Flow: Flow{Name: "gpukit verify", Machines: machines, Phases: phases}}, nil
}

// Result is the run's verdict.
func (v *Verify) Result(sum *engine.Summary, dryRun bool) *VerifyResult {
	r := &VerifyResult{Header: NewHeader(KindVerify), Nodes: v.Verify.Nodes(), Cluster: v.Verify.Cluster(), DryRun: dryRun}
	for _, n := range r.Nodes {
		if n.Failed() {
			r.Failed = append(r.Failed, n.Host)
		}
		for _, t := range []struct {
			what string
			test verify.Test
		}{{"dcgm", n.DCGM}, {"nccl", n.NCCL}} {
			if t.test.Status == acceptance.NotRun {
				r.NotRun = append(r.NotRun, fmt.Sprintf("%s %s: %s", n.Host, t.what, first(t.test.Detail)))
			}
		}
	}
	for _, h := range sum.Failed() {
		if !slices.Contains(r.Failed, h.Host) {
			r.Failed = append(r.Failed, h.Host)
		}
	}
	r.Passed = len(r.Failed) == 0 && len(r.NotRun) == 0 && !dryRun && len(r.Nodes) > 0 && !sum.Cancelled
	return r
}

func first(s []string) string {
	if len(s) == 0 {
		return "no reason given"
	}
	return s[0]
}
