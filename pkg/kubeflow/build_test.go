package kubeflow

import (
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/gpukit/gpukit/test/fixtures"
)

// reference reads a reference build (what the upstream kustomize CLI made
// of the release's example) as objects by key.
func reference(t *testing.T, file string) map[string]any {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := kio.FromBytes(b)
	if err != nil {
		t.Fatal(err)
	}
	return byKey(t, nodes)
}

func byKey(t *testing.T, nodes []*yaml.RNode) map[string]any {
	t.Helper()
	out := map[string]any{}
	for _, n := range nodes {
		var v any
		if err := yaml.Unmarshal([]byte(n.MustString()), &v); err != nil {
			t.Fatal(err)
		}
		if _, dup := out[ObjectKey(n)]; dup {
			t.Fatalf("two objects %s", ObjectKey(n))
		}
		out[ObjectKey(n)] = v
	}
	return out
}

// sameObjects compares two builds object for object: kind, namespace, name
// and content.
func sameObjects(t *testing.T, got, want map[string]any) {
	t.Helper()
	n := 0
	for k, w := range want {
		g, ok := got[k]
		switch {
		case !ok:
			t.Errorf("missing %s", k)
		case !reflect.DeepEqual(g, w):
			t.Errorf("%s differs from the reference build", k)
		}
		if n++; t.Failed() && n > 20 {
			t.Fatal("more differences left out")
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("extra %s", k)
		}
	}
}

// Kubeflow v1.10.2's example builds offline in-process to exactly what
// kustomize 5.4.3 (the version that release documents) makes of it: 611
// objects. Without QuoteLiteralSelectors the kustomize API of this program
// (v0.21, kustomize 5.8) keeps the user Profile's name $(profile-name);
// Build refuses that, naming the object.
func TestBuildKubeflowV1102LikeTheReference(t *testing.T) {
	dir := fixtures.Dir(t, "kubeflow")
	t.Parallel()
	mem, err := LoadTree(filepath.Join(dir, "manifests-v1.10.2.tar.gz"), "/kf")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := LoadTree(filepath.Join(dir, "manifests-v1.10.2.tar.gz"), "/kf")
	if err != nil {
		t.Fatal(err)
	}
	var said []string
	objs, err := Build(mem, "/kf/manifests", "/kf/manifests/example", func(format string, args ...any) {
		said = append(said, fmt.Sprintf(format, args...))
	})
	if err != nil {
		t.Fatal(err)
	}
	// kustomize's warnings reach the log, once each with their count.
	if !slices.ContainsFunc(said, func(l string) bool {
		return strings.HasPrefix(l, "kustomize: # Warning: 'vars' is deprecated.") && strings.HasSuffix(l, " times)")
	}) || len(said) > 20 {
		t.Errorf("kustomize's warnings as logged:\n%s", strings.Join(said, "\n"))
	}
	want := reference(t, filepath.Join(dir, "reference-builds", "v1.10.2-example-kustomize-5.4.3.yaml.gz"))
	if len(objs) != 611 || len(want) != 611 {
		t.Errorf("%d objects, the reference %d (want 611)", len(objs), len(want))
	}
	sameObjects(t, byKey(t, objs), want)

	// The same tree as kustomize 5.8 builds it: refused, the Profile named.
	_, err = build(raw, "/kf/manifests", "/kf/manifests/example", t.Logf)
	if err == nil || !strings.Contains(err.Error(), "kubeflow.org/v1beta1/Profile /$(profile-name) holds $(profile-name)") {
		t.Errorf("the unquoted build: %v", err)
	}
}

// Kubeflow 26.03's example references argo-workflows, lws and a jobset
// release file on GitHub: with the remote-bases bundle it builds offline to
// what kustomize 5.8.1 made of it (675 objects); without, every remote
// reference the example reaches is named in one error.
func TestBuildKubeflow2603WithTheRemoteBases(t *testing.T) {
	dir := fixtures.Dir(t, "kubeflow")
	t.Parallel()
	mem, err := LoadTree(filepath.Join(dir, "manifests-26.03.tar.gz"), "/kf")
	if err != nil {
		t.Fatal(err)
	}
	if err := ResolveRemote(mem, "/kf/manifests/example", ""); err == nil ||
		!strings.HasPrefix(err.Error(), "4 remote reference(s) cannot be fetched offline") ||
		!strings.Contains(err.Error(), "https://github.com/argoproj/argo-workflows/manifests/base/workflow-controller?ref=v3.7.3 (github.com/argoproj/argo-workflows@v3.7.3/manifests/base/workflow-controller in a bundle laid out by URL)") ||
		!strings.Contains(err.Error(), "https://github.com/kubernetes-sigs/jobset/releases/download/v0.10.1/manifests.yaml") ||
		// what the example does not reach is not asked for
		strings.Contains(err.Error(), "jobset/releases/download/v0.6.0") || strings.Contains(err.Error(), "lws") {
		t.Errorf("without the bundle: %v", err)
	}
	bundle, err := LoadTree(filepath.Join(dir, "remote-bases", "kubeflow-26.03-remote-bases.tar.gz"), "/remote")
	if err != nil {
		t.Fatal(err)
	}
	if err := copyFS(bundle, mem, "/remote"); err != nil {
		t.Fatal(err)
	}
	if err := ResolveRemote(mem, "/kf/manifests/example", "/remote"); err != nil {
		t.Fatal(err)
	}
	objs, err := Build(mem, "/kf/manifests", "/kf/manifests/example", t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	want := reference(t, filepath.Join(dir, "reference-builds", "26.03-example-kustomize-5.8.1-remote-bases.yaml.gz"))
	if len(objs) != 675 || len(want) != 675 {
		t.Errorf("%d objects, the reference %d (want 675)", len(objs), len(want))
	}
	sameObjects(t, byKey(t, objs), want)
}

func copyFS(from, to filesys.FileSystem, root string) error {
	return from.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		b, err := from.ReadFile(p)
		if err != nil {
			return err
		}
		return writeFile(to, p, b)
	})
}

// What a build writes to os.Stderr and to the standard logger is taken,
// each line once with its count, and both are theirs again after it.
func TestCaptured(t *testing.T) {
	before, logBefore := os.Stderr, log.Writer()
	lines, err := captured(func() error {
		fmt.Fprintln(os.Stderr, "# Warning: x")
		log.Print("y")
		fmt.Fprintln(os.Stderr, "# Warning: x")
		return errors.New("z")
	})
	if err == nil || err.Error() != "z" || strings.Join(lines, "|") != "# Warning: x (2 times)|y" {
		t.Errorf("%q %v", lines, err)
	}
	if os.Stderr != before || log.Writer() != logBefore {
		t.Error("os.Stderr or the standard logger not restored")
	}
}
