package kube

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpukit/gpukit/pkg/facts"
	"github.com/gpukit/gpukit/pkg/inventory"
)

// NodeLabels are the labels a host's node carries: from its GPUs and from
// the inventory. Values are made label-safe as GPU feature discovery makes
// them (NVIDIA H100 80GB HBM3 -> NVIDIA-H100-80GB-HBM3).
func NodeLabels(m inventory.Machine, f *facts.Facts) map[string]string {
	out := map[string]string{}
	if g, ok := facts.Summarize(f); ok {
		products := make([]string, len(g.Products))
		for i, p := range g.Products {
			products[i] = labelValue(p)
		}
		out[LabelGPUProduct] = labelValue(strings.Join(products, "_"))
		out[LabelGPUCount] = strconv.Itoa(g.Count)
		// What NVIDIA's device plugin and GPU feature discovery select
		// their nodes by, before node feature discovery has looked.
		out[LabelGPUPresent] = "true"
		if g.MemMiB > 0 {
			out[LabelGPUMemory] = strconv.FormatInt(g.MemMiB, 10)
		}
		if v := labelValue(g.Driver); v != "" {
			out[LabelDriver] = v
		}
		if v := labelValue(g.CUDA); v != "" {
			out[LabelCUDA] = v
		}
	}
	if m.HasRole(inventory.RoleIngress) {
		out[LabelIngress] = "true"
	}
	maps.Copy(out, m.Labels)
	return out
}

// labelValue is s as a label value: at most 63 of [A-Za-z0-9._-], starting
// and ending with a letter or digit; others become '-'.
func labelValue(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			b[i] = '-'
		}
	}
	if len(b) > 63 {
		b = b[:63]
	}
	return strings.Trim(string(b), "-_.")
}

// Want is what gpukit wants of m's node: its labels, the inventory's
// taints, and kubeadm's control-plane taint on control planes while the
// cluster has workers (a cluster of control planes only runs its pods
// there, so the taint comes off).
func Want(inv *inventory.Inventory, m inventory.Machine, f *facts.Facts) NodeWant {
	w := NodeWant{Labels: NodeLabels(m, f), OwnPrefix: LabelPrefix, Taints: Taints(inv, m)}
	if m.HasRole(inventory.RoleControlPlane) && !HasWorker(inv) {
		w.Remove = append(w.Remove, ControlPlaneTaint)
	}
	return w
}

// Taints are the taints m's node carries: the control-plane taint on control
// planes while the cluster has workers, then the inventory's.
func Taints(inv *inventory.Inventory, m inventory.Machine) []corev1.Taint {
	out := []corev1.Taint{}
	if m.HasRole(inventory.RoleControlPlane) && HasWorker(inv) {
		out = append(out, ControlPlaneTaint)
	}
	for _, s := range m.Taints {
		t, _ := ParseTaint(s) // validated by the inventory
		out = append(out, t)
	}
	return out
}

// HasWorker says whether a host of inv runs workloads as a worker: while
// none does, the control planes run them and keep no control-plane taint.
func HasWorker(inv *inventory.Inventory) bool {
	return slices.ContainsFunc(inv.Machines, func(m inventory.Machine) bool { return m.HasRole(inventory.RoleWorker) })
}

// NodeName is the name m's node registers under: its inventory name, which
// kubeadm passes to the kubelet (nodeRegistration.name).
func NodeName(m inventory.Machine) string { return m.Name }
