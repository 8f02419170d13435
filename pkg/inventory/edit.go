package inventory

import (
	"bytes"
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
)

// SetVersions rewrites spec.versions fields of an inventory file in place
// (field name -> value; an empty value is left as it is), changing nothing
// else in the text: comments, order and quoting stay as the user wrote
// them. A field the file does not set yet is added under spec.versions; an
// inventory without spec.versions is an error naming what to add.
func SetVersions(data []byte, values map[string]string) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	if len(doc.Content) == 0 {
		return nil, fmt.Errorf("empty inventory")
	}
	spec := mapValue(doc.Content[0], "spec")
	versions := mapValue(spec, "versions")
	if versions == nil || versions.Kind != yaml.MappingNode || versions.Style&yaml.FlowStyle != 0 {
		return nil, fmt.Errorf("the inventory has no spec.versions block to record the versions in: add spec.versions with %s", strings.Join(keys(values), ", "))
	}
	lines := bytes.SplitAfter(data, []byte("\n"))
	var add []string
	for _, field := range []string{"nvidiaDriver", "cuda", "containerToolkit", "kubernetes"} {
		v, ok := values[field]
		if !ok || v == "" {
			continue
		}
		n := mapValue(versions, field)
		if n == nil {
			add = append(add, field)
			continue
		}
		if n.Kind != yaml.ScalarNode || n.Line < 1 || n.Line > len(lines) {
			return nil, fmt.Errorf("spec.versions.%s (line %d): not a plain value", field, n.Line)
		}
		line := string(lines[n.Line-1])
		start := n.Column - 1
		width := len(n.Value)
		quote := ""
		switch n.Style {
		case yaml.DoubleQuotedStyle:
			quote, width = `"`, width+2
		case yaml.SingleQuotedStyle:
			quote, width = `'`, width+2
		case 0:
		default:
			return nil, fmt.Errorf("spec.versions.%s (line %d): not a plain value", field, n.Line)
		}
		if start < 0 || start+width > len(line) || strings.Trim(line[start:start+width], `"'`) != n.Value {
			return nil, fmt.Errorf("spec.versions.%s (line %d): cannot be rewritten in place", field, n.Line)
		}
		lines[n.Line-1] = []byte(line[:start] + quote + v + quote + line[start+width:])
	}
	if len(add) > 0 {
		last := versions.Content[len(versions.Content)-2]
		indent := strings.Repeat(" ", last.Column-1)
		at := lastLine(versions)
		var extra []byte
		for _, f := range add {
			extra = append(extra, []byte(fmt.Sprintf("%s%s: %q\n", indent, f, values[f]))...)
		}
		if at > len(lines) {
			at = len(lines)
		}
		if at > 0 && !bytes.HasSuffix(lines[at-1], []byte("\n")) {
			lines[at-1] = append(lines[at-1], '\n')
		}
		lines = append(lines[:at], append([][]byte{extra}, lines[at:]...)...)
	}
	return bytes.Join(lines, nil), nil
}

func mapValue(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// lastLine is the last line of the mapping's last value (1-based).
func lastLine(m *yaml.Node) int {
	n := m
	for len(n.Content) > 0 {
		n = n.Content[len(n.Content)-1]
	}
	return n.Line
}

func keys(m map[string]string) []string {
	var out []string
	for _, f := range []string{"nvidiaDriver", "cuda", "containerToolkit", "kubernetes"} {
		if m[f] != "" {
			out = append(out, f)
		}
	}
	return out
}
