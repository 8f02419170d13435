package ansible

import (
	"bytes"
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/gpukit/gpukit/pkg/inventory"
)

// Render writes the converted inventory as a gpukit cluster.yaml: a comment
// header naming the sources and listing every note, then the Cluster with
// fields in the order of the format (apiVersion, kind, metadata, spec).
// The output is stable: the same input renders the same bytes.
func Render(res *Result) []byte {
	var b bytes.Buffer
	sources := "an Ansible inventory"
	if len(res.Sources) > 0 {
		sources = res.Sources[0]
		if len(res.Sources) > 1 {
			sources += " (with " + strings.Join(res.Sources[1:], ", ") + ")"
		}
	}
	fmt.Fprintf(&b, "# gpukit inventory converted from %s.\n", oneLine(sources))
	if len(res.Notes) == 0 {
		b.WriteString("# Every host and variable was converted; nothing needed a note.\n")
	} else {
		fmt.Fprintf(&b, "# Read these %d notes before running gpukit: they say what was not\n# converted or was changed on the way.\n", len(res.Notes))
		for _, n := range res.Notes {
			fmt.Fprintf(&b, "#   - %s\n", oneLine(n.String()))
		}
	}
	b.WriteString("\n")
	b.Write(marshal(res.Cluster))
	return b.Bytes()
}

// marshal encodes a Cluster as YAML with two-space indentation; roles and
// taints are written inline ([control-plane, worker]) so that a host range
// stays three lines.
func marshal(cl inventory.Cluster) []byte {
	var root yaml.Node
	if err := root.Encode(cl); err != nil {
		// Cluster holds only strings, ints, bools, slices, maps and pointers
		// to those: encoding cannot fail unless types.go changes in a way
		// this package's tests would catch at once.
		panic(fmt.Sprintf("ansible: encode cluster: %v", err))
	}
	inlineLists(&root)
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&root); err != nil {
		panic(fmt.Sprintf("ansible: encode cluster: %v", err))
	}
	_ = enc.Close()
	return b.Bytes()
}

// inlineLists switches the short scalar lists (roles, taints) to flow style.
func inlineLists(n *yaml.Node) {
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if (k.Value == "roles" || k.Value == "taints") && v.Kind == yaml.SequenceNode {
				v.Style = yaml.FlowStyle
			}
		}
	}
	for _, c := range n.Content {
		inlineLists(c)
	}
}
