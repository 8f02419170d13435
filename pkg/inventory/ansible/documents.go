package ansible

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
)

// typeMeta is the apiVersion and kind of a Kubernetes-style YAML document.
type typeMeta struct {
	apiVersion, kind string
	line             int // of the apiVersion key
}

// readTypeMeta finds a top-level apiVersion with a scalar value. An Ansible
// YAML inventory's top-level keys are groups, whose values are mappings, so
// such a file is some tool's own format: which one decides whether it is
// converted (a KubeKey v4 Inventory) or refused with an error saying what it is.
func readTypeMeta(root *yaml.Node) (typeMeta, bool) {
	var tm typeMeta
	found := false
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], deref(root.Content[i+1])
		if v == nil || v.Kind != yaml.ScalarNode {
			continue
		}
		switch k.Value {
		case "apiVersion":
			tm.apiVersion, tm.line, found = v.Value, k.Line, true
		case "kind":
			tm.kind = v.Value
		}
	}
	return tm, found
}

// KubeKey v4's Inventory; kubekey's api/core/v1/inventory_types.go defines it.
const (
	kubekeyGroup          = "kubekey.kubesphere.io"
	kubekeyInventoryAPI   = kubekeyGroup + "/v1"
	kubekeyInventoryKind  = "Inventory"
	kubekeyInventoryShape = "apiVersion " + kubekeyInventoryAPI + ", kind " + kubekeyInventoryKind
)

// isKubeKeyInventory reports the one such document the package converts.
func (t typeMeta) isKubeKeyInventory() bool {
	return t.apiVersion == kubekeyInventoryAPI && t.kind == kubekeyInventoryKind
}

// refusal explains why a document that is not a KubeKey v4 Inventory is not
// converted: what the file is, and what to do instead.
func (t typeMeta) refusal(file string) error {
	group, version, _ := strings.Cut(t.apiVersion, "/")
	kind := t.kind
	if kind == "" {
		kind = "document with no kind"
	}
	var msg string
	switch group {
	case kubekeyGroup:
		switch {
		case t.kind == "Cluster":
			release := "KubeKey"
			if version == "v1alpha2" {
				release = "KubeKey v3"
			}
			msg = fmt.Sprintf("this is a %s Cluster (%s): not supported; convert it to a KubeKey v4 Inventory "+
				"(%s: spec.hosts with connector host, port, user and private_key, spec.groups kube_control_plane "+
				"and kube_worker from roleGroups control-plane and worker) and import that, "+
				"or write a gpukit inventory (gpukit inventory example)", release, t.apiVersion, kubekeyInventoryShape)
		case t.kind == "Config":
			msg = fmt.Sprintf("this is a KubeKey v4 Config (%s): cluster settings, no hosts; import the KubeKey Inventory that goes with it (%s)",
				t.apiVersion, kubekeyInventoryShape)
		case t.kind == kubekeyInventoryKind:
			msg = fmt.Sprintf("this is a KubeKey Inventory of apiVersion %s; gpukit reads KubeKey v4's, %s", t.apiVersion, kubekeyInventoryAPI)
		default:
			msg = fmt.Sprintf("this is a KubeKey %s (%s), not an inventory; import the KubeKey Inventory (%s)", kind, t.apiVersion, kubekeyInventoryShape)
		}
	case "k0sctl.k0sproject.io":
		msg = fmt.Sprintf("this is a k0sctl cluster file (%s, kind %s): not supported; write its hosts into a gpukit inventory "+
			"(gpukit inventory example): each spec.hosts[].ssh address, user, port and keyPath become a host's address and ssh settings, "+
			"role controller becomes control-plane, worker stays worker", t.apiVersion, kind)
	case "gpukit.dev":
		msg = fmt.Sprintf("this is already a gpukit inventory (%s, kind %s): nothing to import; check it with gpukit inventory validate -i %s",
			t.apiVersion, kind, file)
	default:
		msg = fmt.Sprintf("this is a %s (apiVersion %s), not an Ansible inventory or a KubeKey v4 Inventory (%s), the formats gpukit imports",
			kind, t.apiVersion, kubekeyInventoryShape)
	}
	return &ParseError{File: file, Line: t.line, Msg: msg}
}
