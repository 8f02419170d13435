package ansible

import (
	"sort"
	"strings"
)

// varNotes reports the variables that reach converted hosts but have no
// gpukit equivalent: per group (and file) one note listing them, per host
// variable name one note for all hosts that set it, and the variables with a
// specific explanation grouped by that explanation.
func (c *converter) varNotes(hosts []*mappedHost) {
	reaches := map[string]bool{}
	converted := map[string]bool{}
	for _, m := range hosts {
		converted[m.src.name] = true
		for g := range m.src.groups {
			reaches[g] = true
		}
	}
	for _, gname := range c.inv.groupOrder {
		if reaches[gname] {
			c.scopeNotes("group "+gname, c.inv.groups[gname].vars)
		}
	}
	type hostVar struct {
		first  position
		advice string
		hosts  []string
	}
	byKey := map[string]*hostVar{}
	var keys []string
	for _, hn := range c.inv.hostOrder {
		if !converted[hn] {
			continue
		}
		for _, v := range sortedVars(c.inv.hosts[hn].vars) {
			class, advice := classifyVar(v.key)
			if class != varUnknown && class != varAdvice {
				continue
			}
			u := byKey[v.key]
			if u == nil {
				u = &hostVar{first: v.pos, advice: advice}
				byKey[v.key] = u
				keys = append(keys, v.key)
			}
			u.hosts = append(u.hosts, hn)
		}
	}
	for _, k := range keys {
		u := byKey[k]
		why := "no gpukit equivalent"
		if u.advice != "" {
			why = u.advice
		}
		c.notes.addf(u.first, "variable "+k, "set on %d host(s) (%s), not converted: %s", len(u.hosts), listNames(u.hosts, 5), why)
	}
}

// scopeNotes lists one group's unconvertible variables, one note per source
// file, plus one note per explanation for the variables that have one.
func (c *converter) scopeNotes(subject string, vars varSet) {
	type bucket struct {
		first position
		keys  []string
	}
	var order []string
	buckets := map[string]*bucket{}
	add := func(id string, v variable) {
		b := buckets[id]
		if b == nil {
			b = &bucket{first: v.pos}
			buckets[id] = b
			order = append(order, id)
		}
		b.keys = append(b.keys, v.key)
	}
	for _, v := range sortedVars(vars) {
		switch class, advice := classifyVar(v.key); class {
		case varAdvice:
			add(v.pos.file+"\x00"+advice, v)
		case varUnknown:
			add(v.pos.file+"\x00", v)
		}
	}
	for _, id := range order {
		b := buckets[id]
		sort.Strings(b.keys)
		if _, advice, _ := strings.Cut(id, "\x00"); advice != "" {
			subject := "variable "
			if len(b.keys) > 1 {
				subject = "variables "
			}
			c.notes.addf(b.first, subject+strings.Join(b.keys, ", "), "not converted: %s", advice)
			continue
		}
		c.notes.addf(b.first, subject, "%d variable(s) with no gpukit equivalent, not converted: %s", len(b.keys), strings.Join(b.keys, ", "))
	}
}

// sortedVars orders a scope's variables by file and line.
func sortedVars(vars varSet) []variable {
	out := make([]variable, 0, len(vars))
	for _, v := range vars {
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.pos.file != b.pos.file {
			return a.pos.file < b.pos.file
		}
		if a.pos.line != b.pos.line {
			return a.pos.line < b.pos.line
		}
		return a.key < b.key
	})
	return out
}
