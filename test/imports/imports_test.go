// Package imports checks the module's import graph: every package has a
// place in one table of layers, imports nothing of a higher layer, pkg/
// nothing of internal/, nothing but tests anything of test/; and the graph
// stays shallow. It reads the import clauses of the files that build here
// (go/build, the sources only: no go command, no network).
package imports

import (
	"errors"
	"fmt"
	"go/build"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/gpukit/gpukit"

// layers are the module's packages, lowest first: a package may import
// packages of its own layer and of lower ones, never of a higher one. Every
// package is named, so that a new one takes a decided place (test/... is
// every package under test/).
var layers = []struct {
	name string
	pkgs []string
}{
	{"leaves: data, text and names, nothing of gpukit", []string{
		"manifests", "internal/version", "pkg/event", "pkg/safetext", "pkg/redact", "pkg/osfamily", "pkg/compat", "pkg/atomicfile", "pkg/download", "pkg/localdir", "pkg/safe", "pkg/acceptance", "pkg/bundlefs", "pkg/debrepo", "pkg/pki", "pkg/imageref", "pkg/dashboards"}},
	{"the model: the inventory, a host's facts, and the MIG layouts decided from both", []string{
		"pkg/facts", "pkg/inventory", "pkg/inventory/ansible", "pkg/mig"}},
	{"transport: SSH and the scripts sent over it", []string{
		"pkg/ssh", "pkg/scripts"}},
	{"the clusters' APIs and the names gpukit gives nodes (Kubernetes', the swarm's)", []string{
		"pkg/kube", "pkg/swarmapi"}},
	{"the engine: phases run on connected hosts, and what shows their events", []string{
		"pkg/engine", "pkg/engine/enginetest", "internal/connect", "pkg/ui", "pkg/ui/internal/synth", "pkg/ui/internal/tuidemo"}},
	{"reading hosts; Helm releases as phases", []string{
		"pkg/probe", "pkg/charts"}},
	{"installers", []string{
		"pkg/nvidia", "pkg/bootstrap/kubeadm", "pkg/bootstrap/swarm", "pkg/preflight", "pkg/hostproxy", "pkg/bundlehost", "pkg/etcd"}},
	{"the cluster API's users and the reports", []string{
		"pkg/kubeflow", "pkg/upgrade", "pkg/dcgm", "pkg/gpuhealth", "pkg/verify", "pkg/swarmplatform"}},
	{"what an air-gapped site needs for an inventory, from every layer above the API's users", []string{"pkg/bundle"}},
	{"flows", []string{"internal/flow"}},
	{"the command line", []string{"internal/cli"}},
	{"commands", []string{"cmd/gpukit"}},
	{"tests and their tools", []string{"test/..."}},
}

// maxLevels bounds the longest import chain (in imports) of the packages
// under cmd/, internal/ and pkg/. It was 10 when the cluster's API had no
// home of its own (cmd/gpukit -> internal/cli -> internal/flow ->
// pkg/kubeflow -> pkg/bootstrap/kubeadm -> pkg/nvidia -> pkg/dcgm ->
// pkg/charts -> pkg/engine -> pkg/facts -> pkg/osfamily). It is 7: flows
// over installers and the API's users, over Helm's phases and the NVIDIA
// layer, over the engine, over the model, over the leaves. What kept it
// higher: the rollout importing the installers for the names they give
// nodes (now pkg/kube and pkg/swarmapi), the API's interface taking the
// engine's host (now kube.Host, which the engine's satisfies), and the
// NVIDIA layer importing the probe (the flow passes it down).
const maxLevels = 7

// layerOf is p's index in layers; false when the table does not name it.
func layerOf(p string) (int, bool) {
	for i, l := range layers {
		for _, q := range l.pkgs {
			if q == p || strings.HasSuffix(q, "/...") && strings.HasPrefix(p, strings.TrimSuffix(q, "...")) {
				return i, true
			}
		}
	}
	return 0, false
}

// pkg is one package of the module: its path under the module and the
// module's packages its non-test files import.
type pkg struct {
	path    string
	imports []string
}

// root is the module's directory, found above the test's.
func root(t *testing.T) string {
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && strings.HasPrefix(string(b), "module "+module+"\n") {
			return dir
		}
		up := filepath.Dir(dir)
		if up == dir {
			t.Fatalf("no go.mod of %s above the test", module)
		}
		dir = up
	}
}

// packages reads every package of the module (not of the modules nested in
// it, test/k8s's), sorted by path.
func packages(t *testing.T) []pkg {
	top := root(t)
	var out []pkg
	err := filepath.WalkDir(top, func(dir string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		name := d.Name()
		if dir != top {
			if name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
				return filepath.SkipDir
			}
		}
		bp, err := build.Default.ImportDir(dir, 0)
		var none *build.NoGoError
		if errors.As(err, &none) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", dir, err)
		}
		rel, err := filepath.Rel(top, dir)
		if err != nil {
			return err
		}
		p := pkg{path: filepath.ToSlash(rel)}
		for _, imp := range bp.Imports {
			if q, ok := strings.CutPrefix(imp, module+"/"); ok {
				p.imports = append(p.imports, q)
			}
		}
		out = append(out, p)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) < 20 {
		t.Fatalf("only %d packages found under %s", len(out), top)
	}
	return out
}

func TestLayers(t *testing.T) {
	for _, p := range packages(t) {
		lp, ok := layerOf(p.path)
		if !ok {
			t.Errorf("%s is in no layer: add it to the table in test/imports (a package imports only its own layer and lower ones)", p.path)
			continue
		}
		for _, q := range p.imports {
			switch lq, ok := layerOf(q); {
			case strings.HasPrefix(p.path, "pkg/") && strings.HasPrefix(q, "internal/"):
				t.Errorf("%s imports %s: pkg/ imports nothing of internal/", p.path, q)
			case !strings.HasPrefix(p.path, "test/") && strings.HasPrefix(q, "test/"):
				t.Errorf("%s imports %s: only tests import test/", p.path, q)
			case ok && lq > lp:
				t.Errorf("%s (%s) imports %s of a higher layer (%s)", p.path, layers[lp].name, q, layers[lq].name)
			}
		}
	}
}

// TestLevels measures the import graph of gpukit's code - the packages
// under cmd/, internal/ and pkg/, not test/'s nor the bill of materials
// (manifests, a leaf) - and bounds its depth: the longest chain of imports.
func TestLevels(t *testing.T) {
	graph := map[string][]string{}
	for _, p := range packages(t) {
		if strings.HasPrefix(p.path, "cmd/") || strings.HasPrefix(p.path, "internal/") || strings.HasPrefix(p.path, "pkg/") {
			graph[p.path] = p.imports
		}
	}
	edges := 0
	level := map[string]int{} // imports on the longest chain from the package
	next := map[string]string{}
	var visit func(p string, stack []string) int
	visit = func(p string, stack []string) int {
		if l, ok := level[p]; ok {
			return l
		}
		if slices.Contains(stack, p) {
			t.Fatalf("import cycle: %s -> %s", strings.Join(stack, " -> "), p)
		}
		l := 0
		for _, q := range graph[p] {
			if _, ok := graph[q]; !ok {
				continue
			}
			if lq := visit(q, append(stack, p)) + 1; lq > l {
				l, next[p] = lq, q
			}
		}
		level[p] = l
		return l
	}
	top := ""
	for _, p := range slices.Sorted(maps.Keys(graph)) {
		for _, q := range graph[p] {
			if _, ok := graph[q]; ok {
				edges++
			}
		}
		if visit(p, nil) > level[top] || top == "" {
			top = p
		}
	}
	chain := []string{top}
	for p := top; next[p] != ""; p = next[p] {
		chain = append(chain, next[p])
	}
	t.Logf("%d packages under cmd/, internal/ and pkg/, %d imports between them, %d levels (the longest chain: %s)", len(graph), edges, level[top], strings.Join(chain, " -> "))
	if level[top] > maxLevels {
		t.Errorf("the longest import chain is %d imports, above %d: %s", level[top], maxLevels, strings.Join(chain, " -> "))
	}
}
