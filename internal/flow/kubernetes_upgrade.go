package flow

import (
	"errors"
	"fmt"
	"strings"

	"github.com/gpukit/gpukit/pkg/bootstrap/kubeadm"
	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/upgrade"
)

// NewUpgradeKubernetes is `gpukit upgrade kubernetes`: the cluster moved to
// the inventory's Kubernetes release (--version applied) through the
// driver upgrade's rollout: the cluster's version checked and kubeadm's
// plan shown first, an etcd snapshot, then the control planes one at a
// time and the workers in waves - the same budget, canary, training
// safety, cordon and drain, state and resume. On each node: kubeadm of the
// new release, kubeadm upgrade apply (the first control plane) or node,
// containerd as the release needs it (its sandbox image; the version the
// bill pairs), kubelet and kubectl, the kubelet restarted; the node given
// back once its kubelet reports the release and it is Ready. The pod
// network and the device plugin follow the bill after the last node.
func NewUpgradeKubernetes(inv *inventory.Inventory, o UpgradeOptions) (*UpgradeDriver, error) {
	if inv.Cluster.Spec.Orchestrator != inventory.Kubernetes {
		return nil, fmt.Errorf("spec.orchestrator is %s: gpukit upgrade kubernetes upgrades a kubeadm cluster (a swarm's engine is the hosts' docker)", inv.Cluster.Spec.Orchestrator)
	}
	kube := kubeadm.New(inv)
	// Per node, in kubeadm's order: kubeadm and its upgrade while the node
	// is in service, then the drain, then what the kubelet runs on.
	o.Upgrade.Before = []engine.Phase{
		kube.UpgradeKubeadm(), // kubernetes/upgrade-kubeadm  kubeadm of the new release, held
		kube.UpgradeNode(),    // kubernetes/upgrade-node     kubeadm upgrade apply (first control plane) or node
	}
	change := []engine.Phase{
		kube.Containerd(),     // kubernetes/containerd       the sandbox image and containerd the release needs
		kube.UpgradeKubelet(), // kubernetes/upgrade-kubelet  kubelet and kubectl, held; the kubelet restarted
	}
	v := inv.Cluster.Spec.Versions.Kubernetes
	o.Upgrade.EveryNode, o.Upgrade.ReadyOnly = true, false
	o.Upgrade.What, o.Upgrade.Converged = "Kubernetes", "the node runs Kubernetes "+v
	o.Upgrade.Snapshot, o.Upgrade.KubeletVersion = "kubernetes-"+v, "v"+v
	up, err := newRollout("gpukit upgrade kubernetes", inv, o, change, nil)
	if err != nil {
		return nil, err
	}
	// After the facts: the cluster's version and kubeadm's plan, before
	// the rollout's check; after the rollout: the add-ons at the bill's
	// versions (their phases change nothing where they are).
	phases := append([]engine.Phase{up.Phases[0], kube.UpgradePlan()}, up.Phases[1:]...)
	up.Phases = append(phases,
		kube.CNI(), // kubernetes/cni  the pod network's release, as the bill pins it
		kube.GPU(), // kubernetes/gpu  the device plugin's release, as the bill pins it
	)
	return up, nil
}

// DecideKubernetes reads the inventory file and decides a Kubernetes
// upgrade to version (X.Y.Z; "" with --resume: the resumed rollout's): the
// unfinished one recorded at statePath (default: the cluster's
// <name>.kubernetes.json) to resume, which must move to the same release,
// or a new one. A release the inventory's cannot reach in one step (a minor
// skipped, a downgrade) is refused here. Refusals are *InputErrors;
// nothing is written.
func DecideKubernetes(file, statePath, version string, resume, dryRun bool) (*UpgradeRollout, error) {
	data, err := inventory.ReadFile(file)
	if err != nil {
		return nil, badInput(err)
	}
	inv, err := inventory.LoadFile(file, data, inventory.Overrides{})
	if err != nil {
		return nil, badInput(err)
	}
	r := &UpgradeRollout{File: file, Data: data, statePath: statePath, dryRun: dryRun, kind: "kubernetes"}
	r.Versions.Kubernetes = inventory.Override{Value: strings.TrimPrefix(version, "v"), Flag: "--version"}
	if !dryRun {
		if r.statePath == "" {
			r.statePath = upgrade.StatePath(inv.Cluster.Metadata.Name, "kubernetes")
		}
		st, got, err := upgrade.Decide(r.statePath, resume, upgrade.Target{Kubernetes: r.Versions.Kubernetes.Value})
		var re *upgrade.ResumeError
		switch {
		case errors.As(err, &re) && re.Field == "kubernetes":
			return nil, badInput(fmt.Errorf("--resume --version %s: the rollout being resumed moves to %s; give the same, or none", re.Want, re.Have))
		case errors.As(err, &re) && re.Field != "":
			return nil, badInput(fmt.Errorf("%s is another rollout's state, not a Kubernetes upgrade's", r.statePath))
		case err != nil:
			return nil, badInput(fmt.Errorf("--resume: %w", err))
		}
		r.state, r.Versions.Kubernetes.Value = st, got.Kubernetes
	}
	want := r.Versions.Kubernetes.Value
	if want == "" {
		return nil, badInput(errors.New("--version X.Y.Z: the Kubernetes release to upgrade to"))
	}
	if have := inv.Cluster.Spec.Versions.Kubernetes; r.state == nil {
		if err := kubeadm.CheckUpgrade(have, want); err != nil {
			return nil, badInput(fmt.Errorf("--version %s: %s says spec.versions.kubernetes %s: %w", want, file, have, err))
		}
	}
	return r, nil
}
