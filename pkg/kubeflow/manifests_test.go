package kubeflow

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Load takes a tree whose example/ is at its top (a checkout) or one
// directory below (GitHub's archives: manifests-26.03/example), and
// refuses one that is not a kubeflow/manifests tree, naming it.
func TestManifestsLoadFindsTheTreeRoot(t *testing.T) {
	write := func(root, rel, content string) {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tree := func(prefix string) string {
		root := t.TempDir()
		write(root, prefix+"example/kustomization.yaml", "resources:\n- ../common\n")
		write(root, prefix+"common/kustomization.yaml", "resources:\n- cm.yaml\n")
		write(root, prefix+"common/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: kf, namespace: kubeflow}\ndata: {a: b}\n")
		return root
	}
	for _, prefix := range []string{"", "manifests-26.03/"} {
		objs, err := Manifests{Version: "26.03", Source: tree(prefix)}.Load(context.Background(), t.Logf)
		if err != nil || len(objs) != 1 || objs[0].GetName() != "kf" {
			t.Errorf("tree %q: %v %v", prefix, objs, err)
		}
	}
	other := t.TempDir()
	write(other, "README.md", "not manifests\n")
	if _, err := (Manifests{Version: "26.03", Source: other}).Load(context.Background(), t.Logf); err == nil || !strings.Contains(err.Error(), other+": no example/kustomization.yaml") {
		t.Errorf("not a tree: %v", err)
	}
}
