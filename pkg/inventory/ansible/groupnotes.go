package ansible

import (
	"fmt"
	"strings"

	"github.com/gpukit/gpukit/pkg/inventory"
)

// unmappedReason says why a host without a gpukit role is left out.
func (c *converter) unmappedReason(h *ansibleHost) string {
	var reasons []string
	if g := c.inv.groupsOfKind(h, kindSlurm); len(g) > 0 {
		reasons = append(reasons, fmt.Sprintf("in Slurm groups (%s), and gpukit does not install Slurm", strings.Join(g, ", ")))
	}
	if g := c.inv.groupsOfKind(h, kindEtcd); len(g) > 0 {
		reasons = append(reasons, "etcd only, and gpukit runs etcd stacked on the control-plane hosts")
	}
	if g := c.inv.groupsOfKind(h, kindCalicoRR); len(g) > 0 {
		reasons = append(reasons, "a Calico route reflector, which gpukit does not manage")
	}
	if g := c.inv.groupsOfKind(h, kindOther); len(g) > 0 {
		reasons = append(reasons, fmt.Sprintf("in groups with no gpukit meaning (%s)", strings.Join(g, ", ")))
	}
	if len(reasons) == 0 {
		reasons = append(reasons, "in no group that maps to a gpukit role (kube_control_plane, kube_node or kube_worker, kube_ingress)")
	}
	return strings.Join(reasons, "; ")
}

// unmapped collects the hosts left out, by reason, so that a hundred Slurm
// login nodes are one note, not a hundred.
type unmapped struct {
	reasons []string
	hosts   map[string][]*ansibleHost
}

func (u *unmapped) add(h *ansibleHost, reason string) {
	if u.hosts == nil {
		u.hosts = map[string][]*ansibleHost{}
	}
	if u.hosts[reason] == nil {
		u.reasons = append(u.reasons, reason)
	}
	u.hosts[reason] = append(u.hosts[reason], h)
}

func (u *unmapped) report(notes *noteList) {
	for _, reason := range u.reasons {
		hs := u.hosts[reason]
		if len(hs) == 1 {
			notes.addf(hs[0].pos, "host "+hs[0].name, "not converted: %s", reason)
			continue
		}
		names := make([]string, len(hs))
		for i, h := range hs {
			names[i] = h.name
		}
		notes.addf(hs[0].pos, fmt.Sprintf("%d hosts (%s)", len(hs), listNames(names, 5)), "not converted: %s", reason)
	}
}

// groupNotes reports groups that carry meaning in Ansible but not in gpukit.
func (c *converter) groupNotes(hosts []*mappedHost) {
	var slurm, other []string
	var slurmPos, otherPos position
	for _, g := range c.inv.groupOrder {
		grp := c.inv.groups[g]
		switch classifyGroup(g) {
		case kindSlurm:
			if slurm == nil {
				slurmPos = grp.pos
			}
			slurm = append(slurm, g)
		case kindOther:
			if len(grp.hosts) == 0 && len(grp.children) == 0 && len(grp.vars) == 0 {
				continue
			}
			if other == nil {
				otherPos = grp.pos
			}
			other = append(other, g)
		case kindCalicoRR:
			c.notes.addf(grp.pos, "group "+g, "Calico route reflectors are not managed by gpukit; not converted")
		case kindEtcd:
			c.etcdNote(grp, hosts)
		}
	}
	if len(slurm) > 0 {
		c.notes.addf(slurmPos, "groups "+strings.Join(slurm, ", "), "not converted: gpukit does not install Slurm; hosts that are also Kubernetes hosts are converted for that role only")
	}
	if len(other) > 0 {
		c.notes.addf(otherPos, "groups "+strings.Join(other, ", "), "have no gpukit meaning and are ignored (only their hosts' Kubernetes roles and connection variables are converted)")
	}
}

// etcdNote explains that gpukit's etcd lives on the control-plane hosts.
func (c *converter) etcdNote(grp *ansibleGroup, hosts []*mappedHost) {
	members := map[string]bool{}
	for _, hn := range c.inv.subtreeHosts(grp, map[string]bool{}) {
		members[hn] = true
	}
	var cp, notCP []string
	for _, m := range hosts {
		if m.roles[0] == inventory.RoleControlPlane {
			cp = append(cp, m.src.name)
		}
		if members[m.src.name] && m.roles[0] != inventory.RoleControlPlane {
			notCP = append(notCP, m.src.name)
		}
	}
	// The layouts agree when the etcd hosts are exactly the control planes.
	isCP := map[string]bool{}
	for _, hn := range cp {
		isCP[hn] = true
	}
	same := len(cp) == len(members)
	for hn := range members {
		same = same && isCP[hn]
	}
	switch {
	case len(members) == 0:
		return
	case same:
		c.notes.addf(grp.pos, "group "+grp.name, "gpukit runs etcd stacked on the control-plane hosts, which are the etcd hosts here; nothing else to convert")
	default:
		c.notes.addf(grp.pos, "group "+grp.name, "gpukit runs etcd stacked on the control-plane hosts (%s), not on the etcd group's hosts; etcd membership is not converted", listNames(cp, 5))
	}
	for _, hn := range notCP {
		h := c.inv.hosts[hn]
		c.notes.addf(h.pos, "host "+hn, "is in etcd but not a control plane: it is converted without etcd")
	}
}

// roleNotes checks what an operator needs before gpukit can run.
func (c *converter) roleNotes(hosts []*mappedHost) {
	for _, m := range hosts {
		if m.roles[0] == inventory.RoleControlPlane {
			return
		}
	}
	c.notes.add("", 0, "cluster", "no host is in kube_control_plane (or kube-master, kube_master, master): add role control-plane to one host (three for high availability); gpukit refuses the inventory until then")
}
