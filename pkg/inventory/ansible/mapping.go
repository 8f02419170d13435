package ansible

import (
	"fmt"

	"go.yaml.in/yaml/v3"

	"github.com/gpukit/gpukit/pkg/inventory"
)

// converter maps one parsed Ansible inventory to a gpukit Cluster.
type converter struct {
	inv   *ansibleInventory
	notes *noteList
	// fromVar records which Ansible variable set a cluster-wide field
	// ("spec.versions.kubernetes" -> kube_version), so that a value gpukit
	// rejects can be dropped with a note naming its source.
	fromVar map[string]variable
}

// mappedHost is one Ansible host on its way to a spec.hosts entry.
type mappedHost struct {
	src     *ansibleHost
	vars    varSet
	name    string
	address string
	roles   []inventory.Role
	labels  map[string]string
	taints  []string
	ssh     inventory.SSH
	become  bool
	// Passwords are compared between hosts to name environment variables,
	// and are never written anywhere.
	sshPassword, sudoPassword *variable
}

func newConverter(inv *ansibleInventory, notes *noteList) *converter {
	return &converter{inv: inv, notes: notes, fromVar: map[string]variable{}}
}

// convert builds the Cluster. The steps run in this order because each
// needs the previous: SSH settings are hoisted into spec.ssh before hosts are
// compressed into ranges, since only hosts with equal settings share a range.
func (c *converter) convert() inventory.Cluster {
	cl := inventory.Cluster{APIVersion: inventory.APIVersion, Kind: inventory.Kind}
	cl.Spec.Orchestrator = inventory.Kubernetes

	bastion, bastionHosts := c.bastionGroup()
	var hosts []*mappedHost
	var skipped unmapped
	for _, name := range c.inv.hostOrder {
		h := c.inv.hosts[name]
		roles := hostRoles(h)
		if len(roles) == 0 {
			if !bastionHosts[name] {
				skipped.add(h, c.unmappedReason(h))
			}
			continue
		}
		m := c.mapHost(h, roles)
		if bastion != nil && m.ssh.Bastion == nil {
			b := *bastion
			m.ssh.Bastion = &b
		}
		hosts = append(hosts, m)
	}
	skipped.report(c.notes)
	c.groupNotes(hosts)
	c.varNotes(hosts)
	c.nameSecrets(hosts)
	c.finishSSH(hosts)
	c.nameHosts(hosts)
	cl.Spec.Versions, cl.Spec.Network = c.clusterVars(hosts)
	cl.Spec.SSH = hoistSSH(hosts)
	cl.Spec.Hosts = compressHosts(hosts)
	c.roleNotes(hosts)
	return cl
}

// mapHost converts one host that has at least one gpukit role.
func (c *converter) mapHost(h *ansibleHost, roles []inventory.Role) *mappedHost {
	m := &mappedHost{src: h, vars: c.inv.effectiveVars(h), roles: roles}
	subject := "host " + h.name
	if x, ok := m.vars.first("ansible_host", "ansible_ssh_host"); ok {
		switch {
		case !c.usable(x):
		case !isAddress(x.text):
			c.notes.addf(x.pos, subject, "%s %q is neither an IP address nor a DNS name; set spec.hosts address by hand", x.label(), x.text)
		default:
			m.address = x.text
		}
	} else if isAddress(h.name) {
		m.address = h.name
	} else {
		hostVar := "ansible_host"
		if c.inv.source == SourceKubeKey {
			hostVar = "connector.host"
		}
		c.notes.addf(h.pos, subject, "has no %s and its name is not an IP address or DNS name, so it has no address; set it by hand", hostVar)
	}
	c.mapConnection(m)
	m.labels = c.mapLabels(m)
	m.taints = c.mapTaints(m)
	return m
}

// mapLabels reads Kubespray's node_labels ({"key": "value"}).
func (c *converter) mapLabels(m *mappedHost) map[string]string {
	x, ok := m.vars["node_labels"]
	if !ok {
		return nil
	}
	var labels map[string]string
	if err := decodeStructured(x, &labels); err != nil {
		c.notes.addf(x.pos, "variable node_labels", "not a mapping of label names to values (%v); not converted", err)
		return nil
	}
	if len(labels) == 0 {
		return nil
	}
	return labels
}

// mapTaints reads Kubespray's node_taints (["key=value:Effect"]).
func (c *converter) mapTaints(m *mappedHost) []string {
	x, ok := m.vars["node_taints"]
	if !ok {
		return nil
	}
	var taints []string
	if err := decodeStructured(x, &taints); err != nil {
		c.notes.addf(x.pos, "variable node_taints", "not a list of taints (%v); not converted", err)
		return nil
	}
	return taints
}

// decodeStructured reads a list or mapping variable: a YAML node, or INI text
// written as a Python literal ({'a': 'b'}, ["x"]), which YAML flow syntax reads.
func decodeStructured(x variable, out any) error {
	if x.node != nil {
		return x.node.Decode(out)
	}
	if x.isTemplate() {
		return fmt.Errorf("a Jinja2 template")
	}
	return yaml.Unmarshal([]byte(x.text), out)
}

// bastionGroup reads Kubespray's [bastion] group: its host is the jump host
// for every other host, and is not itself a cluster member.
func (c *converter) bastionGroup() (*inventory.Bastion, map[string]bool) {
	hosts := map[string]bool{}
	var names []string
	for _, gname := range c.inv.groupOrder {
		if classifyGroup(gname) != kindBastion {
			continue
		}
		for _, hn := range c.inv.subtreeHosts(c.inv.groups[gname], map[string]bool{}) {
			if !hosts[hn] {
				hosts[hn] = true
				names = append(names, hn)
			}
		}
	}
	if len(names) == 0 {
		return nil, hosts
	}
	h := c.inv.hosts[names[0]]
	if len(names) > 1 {
		c.notes.addf(h.pos, "group bastion", "has %d hosts (%s); gpukit uses one jump host, %s", len(names), listNames(names, 5), h.name)
	}
	m := &mappedHost{src: h, vars: c.inv.effectiveVars(h)}
	c.mapConnection(m)
	addr := h.name
	if x, ok := m.vars.first("ansible_host", "ansible_ssh_host"); ok && c.usable(x) {
		addr = x.text
	}
	if !isAddress(addr) {
		c.notes.addf(h.pos, "host "+h.name, "bastion address %q is not an IP address or DNS name; no bastion is converted", addr)
		return nil, hosts
	}
	c.notes.addf(h.pos, "host "+h.name, "is the bastion (Kubespray [bastion] group): converted to ssh.bastion, not to a cluster host")
	return &inventory.Bastion{Address: addr, Port: m.ssh.Port, User: m.ssh.User, KeyFile: m.ssh.KeyFile}, hosts
}
