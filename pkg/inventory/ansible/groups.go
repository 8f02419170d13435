package ansible

import (
	"strings"

	"github.com/gpukit/gpukit/pkg/inventory"
)

// groupKind is what an Ansible group means to gpukit.
type groupKind int

const (
	kindOther        groupKind = iota // unknown to gpukit: ignored, reported
	kindStructural                    // all, ungrouped, k8s_cluster: only carries variables
	kindControlPlane                  // -> role control-plane
	kindWorker                        // -> role worker
	kindIngress                       // -> role ingress
	kindEtcd                          // gpukit runs etcd stacked on control planes
	kindSlurm                         // DeepOps Slurm: not installed by gpukit
	kindBastion                       // Kubespray's jump host group
	kindCalicoRR                      // Kubespray's Calico route reflectors
)

// classifyGroup names the groups of DeepOps, Kubespray (current and legacy
// dash-named spellings), Cloud Native Stack ([master], [nodes]) and KubeKey
// v4 (kube_worker).
func classifyGroup(name string) groupKind {
	n := strings.ToLower(name)
	switch n {
	case "kube_control_plane", "kube-master", "kube_master", "master", "masters", "control_plane", "control-plane":
		return kindControlPlane
	case "kube_node", "kube-node", "node", "nodes", "kube_nodes", "worker", "workers", "kube_worker":
		return kindWorker
	case "kube_ingress", "kube-ingress", "ingress":
		return kindIngress
	case "etcd":
		return kindEtcd
	case "all", "ungrouped", "k8s_cluster", "k8s-cluster":
		return kindStructural
	case "bastion":
		return kindBastion
	case "calico_rr", "calico-rr":
		return kindCalicoRR
	}
	if n == "slurm" || strings.HasPrefix(n, "slurm-") || strings.HasPrefix(n, "slurm_") {
		return kindSlurm
	}
	return kindOther
}

// roleOf is the gpukit role a group kind grants, if any.
func roleOf(k groupKind) (inventory.Role, bool) {
	switch k {
	case kindControlPlane:
		return inventory.RoleControlPlane, true
	case kindWorker:
		return inventory.RoleWorker, true
	case kindIngress:
		return inventory.RoleIngress, true
	}
	return "", false
}

// hostRoles lists the roles of a host in gpukit's usual order.
func hostRoles(h *ansibleHost) []inventory.Role {
	have := map[inventory.Role]bool{}
	for g := range h.groups {
		if r, ok := roleOf(classifyGroup(g)); ok {
			have[r] = true
		}
	}
	var roles []inventory.Role
	for _, r := range []inventory.Role{inventory.RoleControlPlane, inventory.RoleWorker, inventory.RoleIngress} {
		if have[r] {
			roles = append(roles, r)
		}
	}
	return roles
}

// groupsOfKind lists h's groups of kind k, in inventory order.
func (inv *ansibleInventory) groupsOfKind(h *ansibleHost, k groupKind) []string {
	var out []string
	for _, g := range inv.groupOrder {
		if h.groups[g] && classifyGroup(g) == k {
			out = append(out, g)
		}
	}
	return out
}
