package ansible

import (
	"fmt"
	"regexp"
	"strings"
)

// iniSection matches "[group]", "[group:children]" and "[group:vars]" with an
// optional trailing comment, the same grammar as Ansible's ini plugin.
var iniSection = regexp.MustCompile(`^\[([^:\]\s]+)(?::(\w+))?\]\s*(?:#.*)?$`)

// iniGroupName is a child line of a [group:children] section.
var iniGroupName = regexp.MustCompile(`^([^:\]\s]+)\s*(?:#.*)?$`)

// iniHostLike recognises a commented-out host line such as "#gpu01" or
// "# node1 ansible_host=10.0.0.1": a name-like first word and nothing but
// key=value words after it. The templates shipped by DeepOps and Kubespray
// are exactly that, and an operator who converts one must be told so.
var iniHostLike = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._\[\]:-]*$`)

// iniState is the kind of section a line belongs to.
type iniState int

const (
	iniHosts iniState = iota
	iniChildren
	iniVars
)

// parseINI reads an Ansible INI inventory.
func parseINI(file string, data []byte) (*ansibleInventory, error) {
	inv := newInventory(file)
	text := strings.TrimPrefix(string(data), "\ufeff")
	state := iniHosts
	current := inv.groups["ungrouped"]
	for i, raw := range strings.Split(text, "\n") {
		lineNo := i + 1
		pos := position{file: file, line: lineNo}
		line := strings.TrimSpace(raw)
		if line == "" {
			continue
		}
		if line[0] == '#' || line[0] == ';' {
			if state == iniHosts && isCommentedHost(line[1:]) {
				if inv.commentedHosts == 0 {
					inv.firstCommentedHost = lineNo
				}
				inv.commentedHosts++
			}
			continue
		}
		perr := func(format string, args ...any) error {
			return &ParseError{File: file, Line: lineNo, Msg: fmt.Sprintf(format, args...)}
		}
		if line[0] == '[' {
			m := iniSection.FindStringSubmatch(line)
			if m == nil {
				return nil, perr("invalid section header %q", line)
			}
			name, kind := m[1], m[2]
			switch kind {
			case "":
				state = iniHosts
			case "children":
				state = iniChildren
			case "vars":
				state = iniVars
			default:
				return nil, perr("section [%s:%s] has unknown type %q (want children or vars)", name, kind, kind)
			}
			current = inv.group(name, pos)
			if current.pos.line == 0 {
				current.pos = pos // "all" and "ungrouped" exist before they are written
			}
			continue
		}
		switch state {
		case iniHosts:
			if err := parseINIHostLine(inv, current, line, pos); err != nil {
				return nil, perr("%v", err)
			}
		case iniChildren:
			m := iniGroupName.FindStringSubmatch(line)
			if m == nil {
				return nil, perr("invalid group name %q in [%s:children]", line, current.name)
			}
			inv.group(m[1], pos)
			inv.addChild(current, m[1])
		case iniVars:
			k, v, ok := strings.Cut(line, "=")
			if !ok {
				return nil, perr("expected key=value in [%s:vars], got %q", current.name, line)
			}
			current.vars.set(variable{key: strings.TrimSpace(k), text: pythonLiteral(v), pos: pos})
		}
	}
	return inv, nil
}

// parseINIHostLine reads "pattern[:port] key=value ..." into group g.
func parseINIHostLine(inv *ansibleInventory, g *ansibleGroup, line string, pos position) error {
	words, err := shellSplit(line, true)
	if err != nil {
		return fmt.Errorf("host line %q: %v", line, err)
	}
	if len(words) == 0 {
		return nil // only a comment after all
	}
	pattern, port, err := splitHostPort(words[0])
	if err != nil {
		return err
	}
	names, err := expandHostPattern(pattern)
	if err != nil {
		return err
	}
	var vars []variable
	if port != "" {
		vars = append(vars, variable{key: "ansible_port", text: port, pos: pos})
	}
	for _, w := range words[1:] {
		k, v, ok := strings.Cut(w, "=")
		if !ok || k == "" {
			return fmt.Errorf("expected key=value host variable, got %q", w)
		}
		vars = append(vars, variable{key: k, text: pythonLiteral(v), pos: pos})
	}
	for _, n := range names {
		h := inv.addHost(g, n, pos)
		for _, v := range vars {
			h.vars.set(v)
		}
	}
	if len(inv.hostOrder) > maxExpandedHosts {
		return fmt.Errorf("the inventory holds more than %d hosts", maxExpandedHosts)
	}
	return nil
}

// isCommentedHost reports whether the text after a comment marker is a host
// line. "#gpu01" counts; "# KUBERNETES" (a heading) does not: with a space
// after the marker, at least one key=value word is required.
func isCommentedHost(body string) bool {
	words, err := shellSplit(body, true)
	if err != nil || len(words) == 0 || !iniHostLike.MatchString(words[0]) {
		return false
	}
	for _, w := range words[1:] {
		if k, _, ok := strings.Cut(w, "="); !ok || k == "" {
			return false
		}
	}
	spaced := body != "" && (body[0] == ' ' || body[0] == '\t')
	return !spaced || len(words) > 1
}
