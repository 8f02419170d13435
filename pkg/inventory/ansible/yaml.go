package ansible

import (
	"errors"
	"fmt"
	"path"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// parseInventory reads an inventory in the given (or detected) format.
func parseInventory(file string, data []byte, f Format) (*ansibleInventory, error) {
	if f == FormatAuto {
		f = detectFormat(file, data)
	}
	if f == FormatYAML {
		return parseYAMLInventory(file, data)
	}
	return parseINI(file, data)
}

// detectFormat decides by extension, then by the first meaningful line: INI
// starts with a section or a host line, YAML with "key:" or "---".
func detectFormat(file string, data []byte) Format {
	switch strings.ToLower(path.Ext(file)) {
	case ".yml", ".yaml", ".json":
		return FormatYAML
	case ".ini", ".cfg":
		return FormatINI
	}
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(strings.TrimPrefix(line, "\ufeff"))
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if line == "---" || line[0] == '{' || strings.HasSuffix(line, ":") || strings.Contains(line, ": ") {
			return FormatYAML
		}
		return FormatINI
	}
	return FormatINI
}

// parseYAMLInventory reads Ansible's YAML inventory: top-level keys are
// groups (normally just "all"), each with optional hosts, children and vars.
func parseYAMLInventory(file string, data []byte) (*ansibleInventory, error) {
	root, err := decodeYAML(file, data)
	if err != nil {
		return nil, err
	}
	inv := newInventory(file)
	if root == nil {
		return inv, nil
	}
	p := &yamlParser{inv: inv}
	if root.Kind != yaml.MappingNode {
		return nil, &ParseError{File: file, Line: root.Line, Msg: "an Ansible YAML inventory must be a mapping of groups (all: {hosts:, children:, vars:})"}
	}
	if tm, ok := readTypeMeta(root); ok {
		if tm.isKubeKeyInventory() {
			return parseKubeKeyInventory(file, root)
		}
		return nil, tm.refusal(file)
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value == "plugin" {
			return nil, &ParseError{File: file, Line: root.Content[i].Line, Msg: "this is a dynamic inventory plugin configuration; export a static inventory first (ansible-inventory -i " + file + " --list --yaml --export) and convert that"}
		}
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		if err := p.group(root.Content[i], root.Content[i+1]); err != nil {
			return nil, err
		}
	}
	return inv, nil
}

// maxYAMLGroupVisits bounds the group walk: aliases can make a small file
// name the same children exponentially often ("billion laughs").
const maxYAMLGroupVisits = 100000

// yamlParser walks one YAML inventory into inv.
type yamlParser struct {
	inv    *ansibleInventory
	visits int
}

// group reads one group node and, recursively, its children.
func (p *yamlParser) group(key, node *yaml.Node) error {
	inv := p.inv
	if p.visits++; p.visits > maxYAMLGroupVisits {
		return yamlError(inv.file, key, "the inventory nests more than %d groups (through YAML aliases?)", maxYAMLGroupVisits)
	}
	pos := position{file: inv.file, line: key.Line}
	g := inv.group(key.Value, pos)
	if g.pos.line == 0 {
		g.pos = pos
	}
	node = deref(node)
	if isNull(node) {
		return nil
	}
	if node.Kind != yaml.MappingNode {
		return yamlError(inv.file, node, "group %s must be a mapping with hosts, children or vars", key.Value)
	}
	for i := 0; i+1 < len(node.Content); i += 2 {
		section, value := node.Content[i], deref(node.Content[i+1])
		entries, err := yamlSection(inv.file, key.Value, section, value)
		if err != nil {
			return err
		}
		switch section.Value {
		case "hosts":
			for j := 0; j+1 < len(entries); j += 2 {
				if err := parseYAMLHost(inv, g, entries[j], entries[j+1]); err != nil {
					return err
				}
			}
		case "children":
			for j := 0; j+1 < len(entries); j += 2 {
				inv.addChild(g, entries[j].Value)
				if err := p.group(entries[j], entries[j+1]); err != nil {
					return err
				}
			}
		case "vars":
			vars, err := yamlVars(inv.file, value)
			if err != nil {
				return err
			}
			g.vars.overlay(vars)
		default:
			return yamlError(inv.file, section, "group %s: unexpected key %q (want hosts, children or vars)", key.Value, section.Value)
		}
	}
	return nil
}

// yamlSection returns the key/value nodes of a hosts or children section. As
// in Ansible a lone string stands for a one-entry mapping; a list is an error
// (a common slip when writing inventories by hand).
func yamlSection(file, group string, section, value *yaml.Node) ([]*yaml.Node, error) {
	switch {
	case isNull(value):
		return nil, nil
	case value.Kind == yaml.ScalarNode:
		return []*yaml.Node{value, {Kind: yaml.ScalarNode, Tag: "!!null"}}, nil
	case value.Kind == yaml.MappingNode:
		return value.Content, nil
	}
	return nil, yamlError(file, value, "group %s: %s must be a mapping (name: {...}), not a list", group, section.Value)
}

// parseYAMLHost reads one "pattern: {vars}" entry of a hosts section.
func parseYAMLHost(inv *ansibleInventory, g *ansibleGroup, key, value *yaml.Node) error {
	pattern, port, err := splitHostPort(key.Value)
	if err != nil {
		return yamlError(inv.file, key, "%v", err)
	}
	names, err := expandHostPattern(pattern)
	if err != nil {
		return yamlError(inv.file, key, "%v", err)
	}
	vars, err := yamlVars(inv.file, deref(value))
	if err != nil {
		return err
	}
	pos := position{file: inv.file, line: key.Line}
	if port != "" {
		vars.set(variable{key: "ansible_port", text: port, pos: pos})
	}
	for _, n := range names {
		inv.addHost(g, n, pos).vars.overlay(vars)
	}
	if len(inv.hostOrder) > maxExpandedHosts {
		return yamlError(inv.file, key, "the inventory holds more than %d hosts", maxExpandedHosts)
	}
	return nil
}

// parseVarsFile reads a group_vars or host_vars file: a YAML mapping.
func parseVarsFile(file string, data []byte) (varSet, error) {
	root, err := decodeYAML(file, data)
	if err != nil || root == nil {
		return nil, err
	}
	return yamlVars(file, root)
}

// yamlVars reads a mapping of variables, keeping each one's line.
func yamlVars(file string, node *yaml.Node) (varSet, error) {
	vars := varSet{}
	if isNull(node) {
		return vars, nil
	}
	if node.Kind != yaml.MappingNode {
		return nil, yamlError(file, node, "variables must be a mapping (key: value)")
	}
	for i := 0; i+1 < len(node.Content); i += 2 {
		k, v := node.Content[i], deref(node.Content[i+1])
		if k.Value == "<<" {
			continue // YAML merge keys are resolved by Ansible's loader, not worth a guess here
		}
		def := variable{key: k.Value, pos: position{file: file, line: k.Line}}
		switch {
		case isNull(v):
		case v.Kind == yaml.ScalarNode:
			def.text = v.Value
			def.vault = v.Tag == "!vault"
		default:
			def.node = v
		}
		vars.set(def)
	}
	return vars, nil
}

// decodeYAML parses one YAML document; nil for an empty file.
func decodeYAML(file string, data []byte) (*yaml.Node, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, yamlSyntaxError(file, err)
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return nil, nil
	}
	return deref(doc.Content[0]), nil
}

// yamlLine finds the line in a yaml.v3 error ("yaml: line 3: ...").
var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

func yamlSyntaxError(file string, err error) error {
	var te *yaml.TypeError
	if errors.As(err, &te) {
		return &ParseError{File: file, Msg: strings.Join(te.Errors, "; ")}
	}
	if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
		n, _ := strconv.Atoi(m[1])
		return &ParseError{File: file, Line: n, Msg: m[2]}
	}
	return &ParseError{File: file, Msg: strings.TrimPrefix(err.Error(), "yaml: ")}
}

func yamlError(file string, n *yaml.Node, format string, args ...any) error {
	return &ParseError{File: file, Line: n.Line, Msg: fmt.Sprintf(format, args...)}
}

// deref follows a YAML alias to the node it names.
func deref(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n == nil || (n.Kind == yaml.ScalarNode && n.Tag == "!!null")
}
