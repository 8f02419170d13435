package bundle

import (
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/gpukit/gpukit/pkg/imageref"
	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// ImagesIn are the container images the objects of a rendered manifest
// (YAML documents) run, each as a full reference (registry/repository:tag,
// @digest kept), in the order first seen.
func ImagesIn(manifest string) ([]string, error) {
	objs, err := kio.FromBytes([]byte(manifest))
	if err != nil {
		return nil, err
	}
	return ImagesOf(objs), nil
}

// ImagesOf are the images the objects run. Where an image is named:
//   - every "image" field holding a reference: pod templates' containers,
//     init and ephemeral containers, and custom resources that name their
//     workload's image the same way (Prometheus, Alertmanager, ...);
//   - an argument or environment value that is a reference with an explicit
//     registry and a tag or digest, alone or after "--flag=": operators that
//     start workloads of their own pass their images that way
//     (prometheus-operator's --prometheus-config-reloader=...).
//
// A ConfigMap's data values that are YAML or JSON documents are searched
// the same way: operators read their workloads' images from there. An
// image an operator compiles in, or builds from parts, is not found.
func ImagesOf(objs []*yaml.RNode) []string {
	var out []string
	seen := map[string]bool{}
	add := func(ref string) {
		if r, ok := imageref.Normal(ref); ok && !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	for _, o := range objs {
		switch o.GetKind() {
		case "Secret":
		case "ConfigMap":
			// Operators read their workloads' images from their
			// configuration: YAML or JSON documents in the data (Katib's
			// suggestion services, KServe's storage initializer).
			data := o.GetDataMap()
			for _, k := range slices.Sorted(maps.Keys(data)) {
				v := data[k]
				// A bare word there is part of a name the operator composes
				// (Istio's values: hub, image: pilot, tag), not an image.
				named := func(ref string) {
					if strings.ContainsAny(ref, "/:@") {
						add(ref)
					}
				}
				if docs, err := kio.FromBytes([]byte(v)); err == nil {
					for _, d := range docs {
						walk(d.YNode(), "", named)
					}
				}
				// and templates, in the data or in a string of it
				// (Istio's injection templates): their literal image lines
				for _, m := range imageLine.FindAllStringSubmatch(v, -1) {
					named(m[1])
				}
			}
		default:
			walk(o.YNode(), "", add)
		}
	}
	return out
}

// walk visits n; key is the mapping key n is the value of.
func walk(n *yaml.Node, key string, add func(string)) {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			walk(n.Content[i+1], n.Content[i].Value, add)
		}
	case yaml.SequenceNode:
		for _, c := range n.Content {
			walk(c, key, add)
		}
	case yaml.ScalarNode:
		switch key {
		case "image":
			add(n.Value)
		case "args", "command", "value":
			v := n.Value
			if i := strings.Index(v, "="); strings.HasPrefix(v, "-") && i > 0 {
				v = v[i+1:]
			}
			if explicit.MatchString(v) {
				add(v)
			}
		}
	}
}

// imageLine is a YAML line that names a literal image.
var imageLine = regexp.MustCompile(`(?m)^\s*(?:- )?image:\s*["']?([^"'{}\s$]+)["']?\s*$`)

// explicit is a reference that names its registry (a host with a dot or a
// port) and a tag or digest: a string that is surely an image.
var explicit = regexp.MustCompile(`^[a-z0-9-]+(\.[a-z0-9-]+)+(:[0-9]+)?/[a-z0-9._/-]+(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}(@sha256:[0-9a-f]{64})?|@sha256:[0-9a-f]{64})$`)
