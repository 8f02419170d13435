package inventory

import (
	"fmt"
	"net/netip"
	"strings"
)

// checker collects the semantic problems of a decoded inventory. It knows
// where every written field is (positions from the decoder) so that each
// issue points at file:line:col, and it skips fields the decoder already
// reported so one mistake yields one message.
type checker struct {
	file    string
	pos     positions
	failed  map[string]bool
	sources []source // parallel to the expanded machines
	errs    []Issue
	warns   []Issue
}

func newChecker(file string, pos positions, failed map[string]bool) *checker {
	return &checker{file: file, pos: pos, failed: failed}
}

// validate runs every rule. The order does not matter: issues are sorted
// by position before they are returned.
func (c *checker) validate(cl *Cluster, machines []Machine) {
	c.checkHeader(cl)
	c.checkSSH("spec.ssh", &cl.Spec.SSH, "", cl.Spec.AllowInlineSecrets)
	for i := range cl.Spec.Hosts {
		c.checkHostEntry(i, &cl.Spec.Hosts[i], &cl.Spec)
	}
	c.checkMachines(cl, machines)
	c.checkRoleCounts(cl, machines)
	c.checkVersions(cl)
	c.checkNVIDIA(cl)
	c.checkMIG(cl)
	c.checkNetwork(cl, machines)
	c.checkAddons(cl, machines)
	c.checkMirrors(&cl.Spec.Mirrors)
	c.checkBundle(cl, machines)
	c.checkRegistryAccess(&cl.Spec.Mirrors, cl.Spec.Orchestrator, cl.Spec.AllowInlineSecrets)
	c.checkProxy("spec.proxy", &cl.Spec.Proxy)
	c.checkKubernetes(cl, machines)
}

func (c *checker) checkHeader(cl *Cluster) {
	if cl.APIVersion != "" && cl.APIVersion != APIVersion {
		c.errorf("apiVersion", "unsupported apiVersion %s; this gpukit reads %s", q(cl.APIVersion), APIVersion)
	}
	if cl.Kind != "" && cl.Kind != Kind {
		c.errorf("kind", "unsupported kind %s; expected %s", q(cl.Kind), Kind)
	}
	if n := cl.Metadata.Name; n != "" && badChar(n, charsName) != nil {
		c.errorf("metadata.name", "invalid cluster name: %v", badChar(n, charsName))
	} else if n != "" && !isDNSLabel(n) {
		c.errorf("metadata.name", "invalid cluster name %s; expected an RFC 1123 label: 1-63 of a-z 0-9 -, starting and ending with a letter or digit", q(n))
	}
	switch o := cl.Spec.Orchestrator; o {
	case Kubernetes, Swarm:
	default:
		c.errorf("spec.orchestrator", "unknown orchestrator %s; expected kubernetes or swarm", q(string(o)))
	}
	if len(cl.Spec.Hosts) == 0 && c.isSet("spec") {
		c.errorf("spec.hosts", "at least one host is required")
	}
}

// rolesFor lists the roles an orchestrator accepts.
func rolesFor(o Orchestrator) []Role {
	if o == Swarm {
		return []Role{RoleManager, RoleWorker}
	}
	return []Role{RoleControlPlane, RoleWorker, RoleIngress}
}

func roleNames(rs []Role) string {
	s := make([]string, len(rs))
	for i, r := range rs {
		s[i] = string(r)
	}
	return strings.Join(s, ", ")
}

// checkHostEntry checks what one spec.hosts entry says for all of its hosts;
// per-host values (name, address) are checked after expansion.
func (c *checker) checkHostEntry(i int, h *Host, spec *Spec) {
	path := fmt.Sprintf("spec.hosts[%d]", i)
	o := spec.Orchestrator
	valid := rolesFor(o)
	if len(h.Roles) == 0 && c.isSet(path) {
		c.errorf(path+".roles", "at least one role is required: %s", roleNames(valid))
	}
	seen := map[Role]bool{}
	for j, r := range h.Roles {
		rpath := fmt.Sprintf("%s.roles[%d]", path, j)
		switch {
		case seen[r]:
			c.errorf(rpath, "role %s is listed twice", q(string(r)))
		case !hasRole(valid, r) && o == Swarm && hasRole(rolesFor(Kubernetes), r):
			c.errorf(rpath, "role %s is for kubernetes; swarm roles are %s", r, roleNames(valid))
		case !hasRole(valid, r) && o == Kubernetes && r == RoleManager:
			c.errorf(rpath, "role manager is for swarm; kubernetes roles are %s", roleNames(valid))
		case !hasRole(valid, r):
			c.errorf(rpath, "unknown role %s; expected one of %s", q(string(r)), roleNames(valid))
		}
		seen[r] = true
	}
	c.checkLabels(path+".labels", h.Labels)
	for j, t := range h.Taints {
		if err := checkTaint(t); err != nil {
			c.errorf(fmt.Sprintf("%s.taints[%d]", path, j), "invalid taint: %v", err)
		}
	}
	if h.SSH != nil {
		c.checkSSH(path+".ssh", h.SSH, spec.SSH.User, spec.AllowInlineSecrets)
	}
	c.checkHostVersions(path, h, spec)
	if h.Proxy != nil {
		c.checkProxy(path+".proxy", h.Proxy)
	}
}

// checkLabels checks node labels' keys and values, each at its place.
func (c *checker) checkLabels(path string, labels map[string]string) {
	for _, k := range sortedKeys(labels) {
		kpath := joinKey(path, k)
		if err := checkLabelKey(k); err != nil {
			c.errorAtKey(kpath, "invalid label: %v", err)
		}
		if err := checkLabelValue(labels[k]); err != nil {
			c.errorf(kpath, "invalid label: %v", err)
		}
	}
}

func hasRole(rs []Role, r Role) bool {
	for _, have := range rs {
		if have == r {
			return true
		}
	}
	return false
}

// dupKey groups duplicate reports of one kind (names or addresses):
// machines of entry `entry` that collide with machines of entry `other`. Two
// overlapping ranges of 200 hosts give one message per kind with a count, not
// 200; a copied host gives one for its name and one for its address.
type dupKey struct {
	kind         string
	entry, other int
}

type dupGroup struct {
	first  string // the first message
	extra  int    // further collisions between the same two entries
	path   string
	plural string
}

// checkMachines checks names and addresses host by host after expansion, and
// that both are unique across the cluster.
func (c *checker) checkMachines(cl *Cluster, ms []Machine) {
	badName := map[int]bool{}
	badAddr := map[int]bool{}
	badNode := map[int]bool{}
	byNode := map[string]int{}
	byName := map[string]int{}
	byAddr := map[string]int{}
	groups := map[dupKey]*dupGroup{}
	var order []dupKey
	addDup := func(k dupKey, path, plural, msg string) {
		if g, ok := groups[k]; ok {
			g.extra++
			return
		}
		groups[k] = &dupGroup{first: msg, path: path, plural: plural}
		order = append(order, k)
	}
	for i, m := range ms {
		src := c.sources[i]
		// Formatted only when something is reported: this loop runs for
		// every host of every range.
		path := func() string { return fmt.Sprintf("spec.hosts[%d]", src.entry) }
		if !badName[src.entry] && !isDNSLabel(m.Name) {
			badName[src.entry] = true
			if err := badChar(m.Name, charsName); err != nil {
				c.errorf(path()+".name", "invalid host name%s: %v", c.fromRange(i), err)
			} else {
				c.errorf(path()+".name", "invalid host name %s%s; expected a lowercase RFC 1123 label: 1-63 of a-z 0-9 -, starting and ending with a letter or digit", q(m.Name), c.fromRange(i))
			}
		}
		if !badAddr[src.entry] {
			if err := checkAddress(m.Address); err != nil {
				badAddr[src.entry] = true
				c.errorf(path()+".address", "invalid address%s: %v", c.forMachine(i, ms), err)
			}
		}
		if m.NodeAddress != "" && !badNode[src.entry] {
			// kubeadm, the kubelet and swarm take an IP; a DNS name here
			// would be resolved on each host, maybe differently.
			if a, err := netip.ParseAddr(m.NodeAddress); err != nil || a.Zone() != "" {
				badNode[src.entry] = true
				c.errorf(path()+".nodeAddress", "invalid node address %s%s: expected an IP address (the cluster advertises its nodes by IP)", q(m.NodeAddress), c.forMachine(i, ms))
			} else if j, dup := byNode[a.Unmap().String()]; dup {
				addDup(dupKey{"node addresses", src.entry, c.sources[j].entry}, path()+".nodeAddress", "node addresses",
					fmt.Sprintf("duplicate node address %s%s (also %s's)", q(m.NodeAddress), c.forMachine(i, ms), q(ms[j].Name)))
			} else {
				byNode[a.Unmap().String()] = i
			}
		}
		if j, dup := byName[m.Name]; dup {
			addDup(dupKey{"names", src.entry, c.sources[j].entry}, path()+".name", "names",
				fmt.Sprintf("duplicate host name %s%s (also defined at line %d)", q(m.Name), c.fromRange(i), c.lineOf(j, "name")))
		} else {
			byName[m.Name] = i
		}
		addr := normalAddress(m.Address)
		if j, dup := byAddr[addr]; dup {
			addDup(dupKey{"addresses", src.entry, c.sources[j].entry}, path()+".address", "addresses",
				fmt.Sprintf("duplicate address %s%s (also used by %s at line %d)", q(m.Address), c.forMachine(i, ms), q(ms[j].Name), c.lineOf(j, "address")))
		} else {
			byAddr[addr] = i
		}
	}
	for _, k := range order {
		g := groups[k]
		msg := g.first
		if g.extra > 0 {
			msg += fmt.Sprintf("; %d more %s of this range collide the same way", g.extra, g.plural)
		}
		c.errorf(g.path, "%s", msg)
	}
}

// checkRoleCounts checks the cluster has a control plane (manager) and warns
// about layouts that work but will hurt.
func (c *checker) checkRoleCounts(cl *Cluster, ms []Machine) {
	if len(cl.Spec.Hosts) == 0 {
		return
	}
	lead, leadName := RoleControlPlane, "control-plane"
	quorum := "etcd"
	if cl.Spec.Orchestrator == Swarm {
		lead, leadName, quorum = RoleManager, "manager", "the swarm raft"
	}
	// Count entries too: an entry whose range failed has no machines but still
	// says which roles the author meant, so "no control plane" is not reported
	// for a cluster whose only control-plane entry has a typo in its range.
	leadEntries, unknownRoles := 0, false
	for i, h := range cl.Spec.Hosts {
		if hasRole(h.Roles, lead) {
			leadEntries++
		}
		unknownRoles = unknownRoles || c.skip(fmt.Sprintf("spec.hosts[%d].roles", i))
	}
	leads, workers := 0, 0
	for _, m := range ms {
		if m.HasRole(lead) {
			leads++
		}
		if m.HasRole(RoleWorker) {
			workers++
		}
	}
	switch {
	case leadEntries == 0 && unknownRoles:
		return // a roles list that failed to decode may hold the control plane
	case leadEntries == 0:
		c.errorf("spec.hosts", "no host has role %s; %s needs at least one (1, 3 or 5)", leadName, cl.Spec.Orchestrator)
		return
	case leads > 1 && leads%2 == 0:
		c.warnf("spec.hosts", "%d %s hosts: %s needs a majority, so an even number tolerates no more failures than %d; use an odd number", leads, leadName, quorum, leads-1)
	case leads == 1 && workers > 10:
		c.warnf("spec.hosts", "a single %s host for %d workers is a single point of failure; use 3", leadName, workers)
	}
	// Swarm managers run tasks by default; Kubernetes control planes are
	// tainted NoSchedule, so their GPUs sit idle unless the taint goes.
	if workers == 0 && len(ms) > 0 && cl.Spec.Orchestrator == Kubernetes {
		c.warnf("spec.hosts", "no host has role worker; workloads and GPUs can only use control-plane hosts once their NoSchedule taint is removed")
	}
}

// fromRange says which range a machine was expanded from, if any.
func (c *checker) fromRange(i int) string {
	if p := c.sources[i].pattern; p != "" {
		return " from range " + q(p)
	}
	return ""
}

// forMachine names the machine an address belongs to when it came from a range.
func (c *checker) forMachine(i int, ms []Machine) string {
	if p := c.sources[i].pattern; p != "" {
		return " of " + q(ms[i].Name) + " from range " + q(p)
	}
	return ""
}

// lineOf is the line where machine i's field (name, address) is written.
func (c *checker) lineOf(i int, field string) int {
	return c.at(fmt.Sprintf("spec.hosts[%d].%s", c.sources[i].entry, field)).Line
}

// ---- reporting helpers ----

func (c *checker) errorf(path, format string, args ...any) {
	if c.skip(path) {
		return
	}
	c.errs = append(c.errs, Issue{Pos: c.at(path), Path: path, Message: fmt.Sprintf(format, args...)})
}

// errorAtKey reports at the key of a mapping entry (a bad label key).
func (c *checker) errorAtKey(path, format string, args ...any) {
	if c.skip(path) {
		return
	}
	pos, ok := c.pos.key[path]
	if !ok {
		pos = c.at(path)
	}
	c.errs = append(c.errs, Issue{Pos: pos, Path: path, Message: fmt.Sprintf(format, args...)})
}

func (c *checker) warnf(path, format string, args ...any) {
	if c.skip(path) {
		return
	}
	c.warns = append(c.warns, Issue{Pos: c.at(path), Path: path, Message: fmt.Sprintf(format, args...)})
}

// isSet reports whether path was written in the file (not defaulted).
func (c *checker) isSet(path string) bool {
	_, ok := c.pos.value[path]
	return ok
}

// orDefault marks a value that came from a default, so a message such as
// "needs driver 590 but nvidiaDriver is 580.95.05 (default)" says why.
func (c *checker) orDefault(path string) string {
	if c.isSet(path) {
		return ""
	}
	return " (default)"
}

// at is where path is written, else where its nearest written parent is.
func (c *checker) at(path string) Position {
	for p := path; p != ""; p = parentPath(p) {
		if pos, ok := c.pos.value[p]; ok {
			return pos
		}
	}
	if pos, ok := c.pos.value[""]; ok {
		return pos
	}
	return Position{File: c.file}
}

// skip reports whether path or a parent could not be decoded.
func (c *checker) skip(path string) bool {
	for p := path; p != ""; p = parentPath(p) {
		if c.failed[p] {
			return true
		}
	}
	return false
}

// parentPath strips the last element: a.b[2].c -> a.b[2] -> a.b -> a -> "".
func parentPath(p string) string {
	if strings.HasSuffix(p, "]") {
		if i := strings.LastIndexByte(p, '['); i >= 0 {
			return p[:i]
		}
	}
	if i := strings.LastIndexByte(p, '.'); i >= 0 {
		return p[:i]
	}
	return ""
}
