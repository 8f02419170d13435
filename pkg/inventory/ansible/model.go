package ansible

import (
	"fmt"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

// ansibleInventory is what every parser produces: Ansible's own model of hosts,
// groups and variables, with the source position of everything so that notes
// can point at the line an operator has to look at.
type ansibleInventory struct {
	file string
	// source is the tool whose format the file is in; a KubeKey v4 Inventory
	// is read into this same model (kubekey.go).
	source     Source
	hosts      map[string]*ansibleHost
	hostOrder  []string // first appearance, which is the order operators wrote
	groups     map[string]*ansibleGroup
	groupOrder []string

	// commentedHosts counts commented-out host lines (INI), so that an empty
	// template can be told apart from an empty file.
	commentedHosts     int
	firstCommentedHost int

	// clusterName is the name the file gives the cluster (KubeKey's
	// metadata.name); Ansible inventories have none.
	clusterName variable
	// notes are what the parser itself has to say (KubeKey fields with no
	// Ansible equivalent); Convert starts from them.
	notes noteList
}

// Source is the tool whose inventory format a file is written in.
type Source string

const (
	SourceAnsible Source = "Ansible"
	// SourceKubeKey is a KubeKey v4 Inventory (kubekey.kubesphere.io/v1),
	// which models hosts, groups and variables the way Ansible does.
	SourceKubeKey Source = "KubeKey"
)

type ansibleHost struct {
	name string
	pos  position
	vars varSet
	// groups is every group the host belongs to, directly or through
	// children, including "all"; filled by resolve.
	groups map[string]bool
}

type ansibleGroup struct {
	name     string
	pos      position
	hosts    []string // direct members in the order written
	children []string
	vars     varSet
	// depth is the longest path from "all", Ansible's variable precedence key.
	depth int
}

type position struct {
	file string
	line int
}

// variable is one Ansible variable definition. Text is the scalar value (an
// INI value after Ansible's own unquoting, or a YAML scalar); node keeps a
// YAML list or mapping for the few variables that need one (node_labels).
type variable struct {
	key  string
	text string
	node *yaml.Node
	pos  position
	// vault marks a !vault encrypted YAML value; its text is ciphertext.
	vault bool
	// name is the variable as the file spells it when that is not key: a
	// KubeKey inventory's connector.user is read as ansible_user, and notes
	// must name what the operator wrote.
	name string
}

// label is the variable's name as written in the source file.
func (v variable) label() string {
	if v.name != "" {
		return v.name
	}
	return v.key
}

// subject is the note subject for the variable.
func (v variable) subject() string { return "variable " + v.label() }

// isTemplate reports a Jinja2 expression, which only Ansible can evaluate.
func (v variable) isTemplate() bool {
	return strings.Contains(v.text, "{{") || strings.Contains(v.text, "{%")
}

// varSet is one scope's variables; a later definition of a key replaces an
// earlier one, as in Ansible.
type varSet map[string]variable

func (s *varSet) set(v variable) {
	if *s == nil {
		*s = varSet{}
	}
	(*s)[v.key] = v
}

// overlay puts other's definitions over s's (group_vars over [group:vars]).
func (s *varSet) overlay(other varSet) {
	for _, v := range other {
		s.set(v)
	}
}

func newInventory(file string) *ansibleInventory {
	inv := &ansibleInventory{file: file, source: SourceAnsible, hosts: map[string]*ansibleHost{}, groups: map[string]*ansibleGroup{}}
	inv.group("all", position{file: file})
	inv.group("ungrouped", position{file: file})
	return inv
}

// group returns the named group, creating it at pos on first mention.
func (inv *ansibleInventory) group(name string, pos position) *ansibleGroup {
	if g := inv.groups[name]; g != nil {
		return g
	}
	g := &ansibleGroup{name: name, pos: pos}
	inv.groups[name] = g
	inv.groupOrder = append(inv.groupOrder, name)
	return g
}

// addHost records host name as a member of group (once), creating the host at
// pos on first mention.
func (inv *ansibleInventory) addHost(group *ansibleGroup, name string, pos position) *ansibleHost {
	h := inv.hosts[name]
	if h == nil {
		h = &ansibleHost{name: name, pos: pos}
		inv.hosts[name] = h
		inv.hostOrder = append(inv.hostOrder, name)
	}
	for _, m := range group.hosts {
		if m == name {
			return h
		}
	}
	group.hosts = append(group.hosts, name)
	return h
}

// addChild makes child a child group of parent.
func (inv *ansibleInventory) addChild(parent *ansibleGroup, child string) {
	for _, c := range parent.children {
		if c == child {
			return
		}
	}
	parent.children = append(parent.children, child)
}

// resolve works out group depths and every host's full group membership,
// refusing cycles the way Ansible does.
func (inv *ansibleInventory) resolve() error {
	// Groups that are nobody's child hang off "all", as in Ansible.
	isChild := map[string]bool{}
	for _, name := range inv.groupOrder {
		for _, c := range inv.groups[name].children {
			isChild[c] = true
		}
	}
	all := inv.groups["all"]
	for _, name := range inv.groupOrder {
		if name != "all" && !isChild[name] {
			inv.addChild(all, name)
		}
	}
	// Hosts in no group but "all" are "ungrouped".
	direct := map[string]bool{}
	for _, name := range inv.groupOrder {
		if name == "all" {
			continue
		}
		for _, h := range inv.groups[name].hosts {
			direct[h] = true
		}
	}
	for _, h := range inv.hostOrder {
		if !direct[h] {
			inv.addHost(inv.groups["ungrouped"], h, inv.hosts[h].pos)
		}
	}

	order, err := inv.topoOrder()
	if err != nil {
		return err
	}
	// Longest path from "all", relaxed in topological order: each group is
	// visited once, however many paths lead to it.
	for _, name := range order {
		g := inv.groups[name]
		for _, c := range g.children {
			if child := inv.groups[c]; child.depth < g.depth+1 {
				child.depth = g.depth + 1
			}
		}
	}

	for _, hn := range inv.hostOrder {
		inv.hosts[hn].groups = map[string]bool{}
	}
	var mark func(g *ansibleGroup, hosts []string)
	mark = func(g *ansibleGroup, hosts []string) {
		for _, hn := range hosts {
			inv.hosts[hn].groups[g.name] = true
		}
	}
	// A host belongs to a group when it is a member of the group or of any
	// descendant; walking each group's subtree keeps this simple and the
	// inventories are small (a few hundred hosts, tens of groups).
	for _, name := range inv.groupOrder {
		g := inv.groups[name]
		mark(g, inv.subtreeHosts(g, map[string]bool{}))
	}
	return nil
}

// topoOrder lists the groups parents first, refusing cycles the way Ansible
// does ("group a is its own ancestor").
func (inv *ansibleInventory) topoOrder() ([]string, error) {
	state := map[string]int{} // 0 unseen, 1 on the stack, 2 done
	var post []string
	var visit func(name string, path []string) error
	visit = func(name string, path []string) error {
		switch state[name] {
		case 1:
			g := inv.groups[name]
			return &ParseError{File: g.pos.file, Line: g.pos.line, Msg: fmt.Sprintf(
				"group %s is its own ancestor (%s)", name, strings.Join(append(path, name), " -> "))}
		case 2:
			return nil
		}
		state[name] = 1
		for _, c := range inv.groups[name].children {
			if err := visit(c, append(path[:len(path):len(path)], name)); err != nil {
				return err
			}
		}
		state[name] = 2
		post = append(post, name)
		return nil
	}
	// Start at "all", then any group it cannot reach (only a cycle can hide one).
	for _, name := range append([]string{"all"}, inv.groupOrder...) {
		if err := visit(name, nil); err != nil {
			return nil, err
		}
	}
	for i, j := 0, len(post)-1; i < j; i, j = i+1, j-1 {
		post[i], post[j] = post[j], post[i]
	}
	return post, nil
}

// subtreeHosts lists the hosts of g and all its descendants.
func (inv *ansibleInventory) subtreeHosts(g *ansibleGroup, seen map[string]bool) []string {
	if seen[g.name] {
		return nil
	}
	seen[g.name] = true
	out := append([]string(nil), g.hosts...)
	for _, c := range g.children {
		out = append(out, inv.subtreeHosts(inv.groups[c], seen)...)
	}
	return out
}

// effectiveVars is what Ansible would give host h: group variables from the
// shallowest group to the deepest (ties by ansible_group_priority, then name),
// then the host's own variables on top.
func (inv *ansibleInventory) effectiveVars(h *ansibleHost) varSet {
	groups := make([]*ansibleGroup, 0, len(h.groups))
	for name := range h.groups {
		groups = append(groups, inv.groups[name])
	}
	sort.Slice(groups, func(i, j int) bool {
		a, b := groups[i], groups[j]
		if a.depth != b.depth {
			return a.depth < b.depth
		}
		if pa, pb := a.priority(), b.priority(); pa != pb {
			return pa < pb
		}
		return a.name < b.name
	})
	out := varSet{}
	for _, g := range groups {
		out.overlay(g.vars)
	}
	out.overlay(h.vars)
	return out
}

// priority is ansible_group_priority (default 1).
func (g *ansibleGroup) priority() int {
	v, ok := g.vars["ansible_group_priority"]
	if !ok {
		return 1
	}
	var p int
	if _, err := fmt.Sscanf(v.text, "%d", &p); err != nil {
		return 1
	}
	return p
}
