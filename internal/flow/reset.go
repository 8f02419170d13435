package flow

import (
	"slices"

	"github.com/gpukit/gpukit/pkg/bootstrap/kubeadm"
	"github.com/gpukit/gpukit/pkg/bootstrap/swarm"
	"github.com/gpukit/gpukit/pkg/bundlehost"
	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/etcd"
	"github.com/gpukit/gpukit/pkg/hostproxy"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/swarmplatform"
)

// Reset is `gpukit reset`: hosts leave the cluster and get their runtime's
// configuration back as it was before gpukit (packages stay). Kubernetes:
// a control plane that stays drains the nodes that leave and deletes them
// from the API, then each host is reset (kubeadm reset, the pod network's
// leftovers, containerd's configuration). Swarm: a manager that stays
// demotes the leaving managers first and removes the leaving nodes from its
// list after; the hosts leave the swarm and get docker's configuration back.
type Reset struct {
	Flow
	// Hosts are the hosts reset.
	Hosts []string
}

// Result is reset's final object.
func (r *Reset) Result(sum *engine.Summary, dryRun bool) *ResetResult {
	return &ResetResult{Header: NewHeader(KindReset), DryRun: dryRun, Reset: r.Hosts, Hosts: sum.HostCounts()}
}

// NewReset builds the flow for the named hosts of inv (none: every host).
func NewReset(inv *inventory.Inventory, names []string) (*Reset, error) {
	var machines []inventory.Machine
	if len(names) == 0 {
		machines = inv.Machines
		for _, m := range machines {
			names = append(names, m.Name)
		}
	} else {
		var err error
		if machines, err = named(inv, names, ""); err != nil {
			return nil, err
		}
	}
	if inv.Cluster.Spec.Orchestrator == inventory.Kubernetes {
		if m, ok := kubeadm.RemainingControlPlane(inv, names); ok {
			machines = append(machines, m)
		}
		k := kubeadm.New(inv)
		return &Reset{Hosts: names, Flow: Flow{
			Name:     "gpukit reset",
			Machines: machines,
			Phases: append([]engine.Phase{
				k.RemoveNodes(names),                                            // reset/remove-nodes  a staying control plane drains the leaving nodes and deletes them
				engine.Scoped{Phase: k.ResetNode(), Hosts: names},               // reset/node          kubeadm reset, CNI leftovers, containerd's config restored
				engine.Scoped{Phase: etcd.Unschedule(inv), Hosts: names},        // reset/etcd-backup   the scheduled etcd snapshots' timer removed
				engine.Scoped{Phase: hostproxy.New(inv).Remove(), Hosts: names}, // reset/proxy  gpukit's proxy settings removed
			}, bundleResetPhases(inv, names)...),
		}}, nil
	}
	if m, ok := swarm.RemainingManager(inv, names); ok {
		machines = append(machines, m)
	}
	sw := swarm.New(inv)
	var platform []engine.Phase
	if first, ok := swarm.FirstManager(inv); ok && slices.Contains(names, first.Name) {
		// reset/platform  the platform's stacks, before their manager leaves
		platform = append(platform, swarmplatform.New(swarmplatform.SiteOf(inv), firstManager(inv)).Remove())
	}
	return &Reset{Hosts: names, Flow: Flow{
		Name:     "gpukit reset",
		Machines: machines,
		Phases: append(append(platform,
			sw.Demote(names), // reset/demote        a staying manager demotes the leaving managers
			engine.Scoped{Phase: sw.Leave(), Hosts: names},                  // reset/leave         leave the swarm, restore daemon.json and the runtime's config
			sw.RemoveNodes(names),                                           // reset/remove-nodes  the staying manager forgets the nodes that left
			engine.Scoped{Phase: hostproxy.New(inv).Remove(), Hosts: names}, // reset/proxy  gpukit's proxy settings removed
		), bundleResetPhases(inv, names)...),
	}}, nil
}

// bundleResetPhases take spec.bundle back from the hosts reset: the
// bundle's package source, and, when the bundle host is one of them, the
// serving (last: the others' resets may still install from it).
func bundleResetPhases(inv *inventory.Inventory, names []string) []engine.Phase {
	if inv.Cluster.Spec.Bundle == nil {
		return nil
	}
	b := bundlehost.New(inv, "")
	phases := []engine.Phase{engine.Scoped{Phase: b.RemoveSources(), Hosts: names}} // reset/bundle-sources  the bundle's package source removed
	if slices.Contains(names, inv.Cluster.Spec.Bundle.Host) {
		phases = append(phases, b.Unserve()) // reset/bundle  the bundle host stops serving, its files removed
	}
	return phases
}
