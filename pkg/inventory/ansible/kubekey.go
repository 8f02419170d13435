package ansible

import "go.yaml.in/yaml/v3"

// KubeKey v4's Inventory (apiVersion kubekey.kubesphere.io/v1, kind
// Inventory; kubekey's api/core/v1/inventory_types.go) is Ansible's model
// written as a Kubernetes object:
//
//	spec:
//	  hosts:  {NAME: {connector: {host, port, user, password, private_key, type}, internal_ipv4, ...}}
//	  groups: {NAME: {hosts: [NAME...], groups: [CHILD...], vars: {...}}}
//	  vars:   {...}
//
// so it is read into the same ansibleInventory and converted by the same
// code, its connector fields standing in for the Ansible variables they mean.

// kubekeyConnector maps KubeKey's connector fields (kubekey's pkg/const,
// VariableConnector*) to the Ansible variables the conversion reads.
var kubekeyConnector = map[string]string{
	"host":        "ansible_host",
	"port":        "ansible_port",
	"user":        "ansible_user",
	"password":    "ansible_password",
	"private_key": "ansible_ssh_private_key_file",
	"type":        "ansible_connection",
}

// KubeKey's SSH connector logs in as root when connector.user is unset
// (kubekey's pkg/connector/ssh_connector.go).
const kubekeyDefaultUser = "root"

// kubekeyTemplateName is metadata.name in KubeKey's inventory template.
const kubekeyTemplateName = "default"

// maxKubeKeyMembers bounds the names the groups list, all together: YAML
// aliases can make a small file list the same long list in every group.
const maxKubeKeyMembers = 4 * maxExpandedHosts

// parseKubeKeyInventory reads a KubeKey v4 Inventory whose root is a mapping.
func parseKubeKeyInventory(file string, root *yaml.Node) (*ansibleInventory, error) {
	inv := newInventory(file)
	inv.source = SourceKubeKey
	var spec *yaml.Node
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], deref(root.Content[i+1])
		switch k.Value {
		case "apiVersion", "kind", "status":
		case "metadata":
			if name := mappingValue(v, "name"); name != nil && name.Kind == yaml.ScalarNode {
				inv.clusterName = variable{key: "metadata.name", text: name.Value, pos: position{file: file, line: name.Line}}
			}
		case "spec":
			spec = v
		default:
			inv.notes.add(file, k.Line, k.Value, "is not part of a KubeKey Inventory (apiVersion, kind, metadata, spec); ignored")
		}
	}
	if isNull(spec) {
		return inv, nil
	}
	if spec.Kind != yaml.MappingNode {
		return nil, yamlError(file, spec, "spec must be a mapping (hosts, groups, vars)")
	}
	var hosts, groups, vars *yaml.Node
	for i := 0; i+1 < len(spec.Content); i += 2 {
		k, v := spec.Content[i], deref(spec.Content[i+1])
		switch k.Value {
		case "hosts":
			hosts = v
		case "groups":
			groups = v
		case "vars":
			vars = v
		default:
			inv.notes.add(file, k.Line, "spec."+k.Value, "is not part of a KubeKey Inventory (spec has hosts, groups and vars); ignored")
		}
	}
	common, err := kubekeyVars(file, vars)
	if err != nil {
		return nil, err
	}
	hostVars, err := kubekeyHosts(inv, hosts)
	if err != nil {
		return nil, err
	}
	groupVars, direct, err := kubekeyGroups(inv, groups, hostVars)
	if err != nil {
		return nil, err
	}
	for _, name := range inv.groupOrder {
		if g := inv.groups[name]; len(groupVars[name]) > 0 && len(g.hosts) == 0 {
			inv.notes.addf(g.pos, "group "+name, "its vars reach no host: KubeKey gives a group's vars only to the hosts the group lists itself, not to those of its child groups")
		}
	}
	// KubeKey's precedence (its pkg/variable): the inventory's vars, then the
	// vars of every group that lists the host itself, then the host's own;
	// nested mappings such as connector merge field by field, which the
	// connector.* variables do here. Unlike Ansible, a group's vars do not
	// reach the hosts of its child groups.
	for _, hn := range inv.hostOrder {
		h := inv.hosts[hn]
		h.vars = varSet{}
		h.vars.overlay(common)
		for _, g := range direct[hn] {
			h.vars.overlay(groupVars[g])
		}
		h.vars.overlay(hostVars[hn])
		kubekeyDefaults(inv, h)
	}
	return inv, nil
}

// kubekeyHosts reads spec.hosts, a mapping of host names to their variables.
func kubekeyHosts(inv *ansibleInventory, node *yaml.Node) (map[string]varSet, error) {
	out := map[string]varSet{}
	if isNull(node) {
		return out, nil
	}
	if node.Kind != yaml.MappingNode {
		return nil, yamlError(inv.file, node, "spec.hosts must be a mapping of host names to their variables (node1: {connector: {...}})")
	}
	for i := 0; i+1 < len(node.Content); i += 2 {
		k := node.Content[i]
		vars, err := kubekeyVars(inv.file, deref(node.Content[i+1]))
		if err != nil {
			return nil, err
		}
		inv.addHost(inv.groups["all"], k.Value, position{file: inv.file, line: k.Line})
		out[k.Value] = vars
		if len(inv.hostOrder) > maxExpandedHosts {
			return nil, yamlError(inv.file, k, "the inventory holds more than %d hosts", maxExpandedHosts)
		}
	}
	return out, nil
}

// kubekeyGroups reads spec.groups. It returns each group's variables and,
// per host, the groups that list it by name, in file order: the groups
// whose variables the host gets.
func kubekeyGroups(inv *ansibleInventory, node *yaml.Node, hostVars map[string]varSet) (map[string]varSet, map[string][]string, error) {
	vars, direct := map[string]varSet{}, map[string][]string{}
	listed := 0
	if isNull(node) {
		return vars, direct, nil
	}
	if node.Kind != yaml.MappingNode {
		return nil, nil, yamlError(inv.file, node, "spec.groups must be a mapping of group names to {hosts: [...], groups: [...], vars: {...}}")
	}
	for i := 0; i+1 < len(node.Content); i += 2 {
		key, value := node.Content[i], deref(node.Content[i+1])
		g := inv.group(key.Value, position{})
		// A child mention may have created the group; its definition is
		// where notes should point.
		g.pos = position{file: inv.file, line: key.Line}
		if isNull(value) {
			continue
		}
		if value.Kind != yaml.MappingNode {
			return nil, nil, yamlError(inv.file, value, "group %s must be a mapping with hosts, groups or vars", key.Value)
		}
		for j := 0; j+1 < len(value.Content); j += 2 {
			section, v := value.Content[j], deref(value.Content[j+1])
			var names []*yaml.Node
			if section.Value == "hosts" || section.Value == "groups" {
				var err error
				if names, err = kubekeyNames(inv.file, key.Value, section.Value, v); err != nil {
					return nil, nil, err
				}
				if listed += len(names); listed > maxKubeKeyMembers {
					return nil, nil, yamlError(inv.file, section, "the groups list more than %d names (through YAML aliases?)", maxKubeKeyMembers)
				}
			}
			switch section.Value {
			case "hosts":
				members := map[string]bool{}
				for _, n := range names {
					if members[n.Value] {
						continue
					}
					members[n.Value] = true
					if _, ok := hostVars[n.Value]; !ok {
						hostVars[n.Value] = varSet{}
						inv.notes.add(inv.file, n.Line, "host "+n.Value, "is in group "+key.Value+
							" but not under spec.hosts: converted with KubeKey's defaults (its name as the address, user root, port 22)")
					}
					inv.addHost(g, n.Value, position{file: inv.file, line: n.Line})
					direct[n.Value] = append(direct[n.Value], g.name)
				}
				if len(inv.hostOrder) > maxExpandedHosts {
					return nil, nil, yamlError(inv.file, section, "the inventory holds more than %d hosts", maxExpandedHosts)
				}
			case "groups":
				for _, n := range names {
					inv.group(n.Value, position{file: inv.file, line: n.Line})
					inv.addChild(g, n.Value)
				}
			case "vars":
				gv, err := kubekeyVars(inv.file, v)
				if err != nil {
					return nil, nil, err
				}
				vars[g.name] = gv
			default:
				return nil, nil, yamlError(inv.file, section, "group %s: unexpected key %q (a KubeKey group has hosts, groups and vars)", key.Value, section.Value)
			}
		}
	}
	return vars, direct, nil
}

// kubekeyNames reads a group's hosts or groups: a list of names.
func kubekeyNames(file, group, section string, node *yaml.Node) ([]*yaml.Node, error) {
	if isNull(node) {
		return nil, nil
	}
	if node.Kind != yaml.SequenceNode {
		return nil, yamlError(file, node, "group %s: %s must be a list of names (- name)", group, section)
	}
	out := make([]*yaml.Node, 0, len(node.Content))
	for _, n := range node.Content {
		n = deref(n)
		if n.Kind != yaml.ScalarNode || n.Value == "" {
			return nil, yamlError(file, n, "group %s: %s must be a list of names (- name)", group, section)
		}
		out = append(out, n)
	}
	return out, nil
}

// kubekeyVars reads one scope's variables, connector's fields becoming the
// Ansible variables they mean (connector.user is read as ansible_user, and
// notes still say connector.user).
func kubekeyVars(file string, node *yaml.Node) (varSet, error) {
	vars, err := yamlVars(file, node)
	if err != nil {
		return nil, err
	}
	c, ok := vars["connector"]
	if !ok {
		return vars, nil
	}
	delete(vars, "connector")
	if c.node == nil {
		if c.text == "" {
			return vars, nil
		}
		return nil, &ParseError{File: file, Line: c.pos.line, Msg: "connector must be a mapping (host, port, user, password, private_key)"}
	}
	fields, err := yamlVars(file, c.node)
	if err != nil {
		return nil, err
	}
	for field, f := range fields {
		f.name = "connector." + field
		f.key = f.name
		if k, ok := kubekeyConnector[field]; ok {
			f.key = k
		}
		vars.set(f)
	}
	return vars, nil
}

// kubekeyDefaults settles what KubeKey decides from a host's variables as a
// whole: its default user, the connector password doubling as the sudo
// password, and a node IP that is just the SSH address again.
func kubekeyDefaults(inv *ansibleInventory, h *ansibleHost) {
	v := h.vars
	user, ok := v["ansible_user"]
	if !ok {
		user = variable{key: "ansible_user", name: "connector.user", text: kubekeyDefaultUser, pos: h.pos}
		v.set(user)
	}
	// KubeKey runs every command through sudo and answers its prompt with
	// connector.password; gpukit needs that said as ssh.sudo.password.
	if pw, ok := v["ansible_password"]; ok && user.text != "root" {
		if _, set := v["ansible_become_password"]; !set {
			pw.key = "ansible_become_password"
			v.set(pw)
		}
	}
	if _, ok := v["ansible_connection"]; !ok && h.name == "localhost" {
		inv.notes.add(h.pos.file, h.pos.line, "host localhost", "KubeKey runs a host named localhost on the machine it runs on, without SSH; "+
			"gpukit reaches every host over SSH, so sshd there must accept gpukit's login (or name the host and give its address)")
	}
	address := h.name
	if x, ok := v["ansible_host"]; ok {
		address = x.text
	}
	for _, key := range []string{"internal_ipv4", "internal_ipv6"} {
		if x, ok := v[key]; ok && x.text == address {
			delete(v, key) // the address the host is reached at: nothing to say
		}
	}
}

// mappingValue is the value of key in a mapping node, or nil.
func mappingValue(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return deref(n.Content[i+1])
		}
	}
	return nil
}
