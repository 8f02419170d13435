package kubeflow

import (
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/filesys"
)

func TestBundlePath(t *testing.T) {
	for ref, want := range map[string]string{
		"https://github.com/argoproj/argo-workflows/manifests/base/crds/minimal?ref=v3.7.3":  "github.com/argoproj/argo-workflows@v3.7.3/manifests/base/crds/minimal",
		"https://github.com/kubernetes-sigs/lws//config/default?ref=v0.7.0":                  "github.com/kubernetes-sigs/lws@v0.7.0/config/default",
		"github.com/kubeflow/pipelines.git/manifests/kustomize/env/dev?ref=2.4.0":            "github.com/kubeflow/pipelines@2.4.0/manifests/kustomize/env/dev",
		"https://github.com/kubernetes-sigs/jobset/releases/download/v0.10.1/manifests.yaml": "github.com/kubernetes-sigs/jobset/releases/download/v0.10.1/manifests.yaml",
		"github.com/org/repo?ref=v1": "github.com/org/repo@v1",
	} {
		if got := bundlePath(ref); got != want {
			t.Errorf("bundlePath(%s) = %s, want %s", ref, got, want)
		}
	}
}

func TestRelPath(t *testing.T) {
	for _, tt := range []struct{ dir, target, want string }{
		{"/kf/m/a/b", "/remote/x@v1/c", "../../../../remote/x@v1/c"},
		{"/kf/m", "/kf/m/sub", "sub"},
		{"/a/b", "/a/c", "../c"},
	} {
		if got, err := relPath(tt.dir, tt.target); err != nil || got != tt.want {
			t.Errorf("relPath(%s, %s) = %s %v, want %s", tt.dir, tt.target, got, err, tt.want)
		}
	}
	if _, err := relPath("/a", "/a"); err == nil {
		t.Error("a kustomization's own directory as its resource")
	}
}

// A selector name that is no regular expression of itself is quoted; one
// that is (a plain name, or a pattern matching itself) is left alone.
func TestQuoteLiteralSelectors(t *testing.T) {
	mem := filesys.MakeFsInMemory()
	k := `replacements:
- source: {kind: ConfigMap, name: cfg, fieldPath: data.name}
  targets:
  - select: {kind: Profile, name: $(profile-name)}
    reject: [{name: "a+b"}, {name: plain}]
    fieldPaths: [metadata.name]
  - select: {kind: Deployment, name: web}
    fieldPaths: [metadata.name]
`
	if err := writeFile(mem, "/t/base/kustomization.yaml", []byte(k)); err != nil {
		t.Fatal(err)
	}
	fixed, err := QuoteLiteralSelectors(mem, "/t")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(fixed, "|") != "/t/base/kustomization.yaml: $(profile-name)|/t/base/kustomization.yaml: a+b" {
		t.Errorf("fixed %q", fixed)
	}
	b, _ := mem.ReadFile("/t/base/kustomization.yaml")
	for _, want := range []string{`name: \$\(profile-name\)`, `name: "a\\+b"`, "name: plain", "name: web"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("no %q in\n%s", want, b)
		}
	}
	if again, _ := QuoteLiteralSelectors(mem, "/t"); len(again) != 0 {
		t.Errorf("quoted twice: %q", again)
	}
}
