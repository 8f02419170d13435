package manifests

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io"

	"go.yaml.in/yaml/v3"
)

//go:embed objects/*.yaml
var objectsFS embed.FS

// Objects returns the Kubernetes objects of objects/<name>.yaml, each a
// fresh map: the static part of what gpukit applies, which the layers
// complete (names, namespaces, labels, images from the bill, what depends
// on the inventory). The files are part of the binary: a missing or
// malformed one is a defect (TestObjects reads every one) and panics.
func Objects(name string) []map[string]any {
	objs, err := objects(name)
	if err != nil {
		panic(err)
	}
	return objs
}

func objects(name string) ([]map[string]any, error) {
	b, err := objectsFS.ReadFile("objects/" + name + ".yaml")
	if err != nil {
		return nil, fmt.Errorf("manifests: %w", err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	var out []map[string]any
	for {
		var o map[string]any
		err := dec.Decode(&o)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("manifests: objects/%s.yaml: %w", name, err)
		}
		if o["apiVersion"] == nil || o["kind"] == nil {
			return nil, fmt.Errorf("manifests: objects/%s.yaml: document %d has no apiVersion or kind", name, len(out)+1)
		}
		out = append(out, o)
	}
}
