package kubeflow

import (
	"bufio"
	"fmt"
	"log"
	"math"
	"os"
	"regexp"
	"runtime/debug"
	"strings"
	"sync"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// Build builds the kustomization at dir of mem (kustomize's defaults, as
// `kustomize build`), after QuoteLiteralSelectors, and refuses the result
// when an object still holds one of the tree's kustomize variables, or a
// $(...) placeholder in its metadata: applied, such an object is refused by
// the API server or, worse, accepted under a wrong name.
// What kustomize prints (its deprecation warnings: dozens for Kubeflow's
// tree) goes to logf, each line once with its count; nil drops it.
func Build(mem filesys.FileSystem, root, dir string, logf func(format string, args ...any)) ([]*yaml.RNode, error) {
	if _, err := QuoteLiteralSelectors(mem, root); err != nil {
		return nil, err
	}
	return build(mem, root, dir, logf)
}

// build is Build without QuoteLiteralSelectors: what kustomize makes of the
// tree as it is, checked.
func build(mem filesys.FileSystem, root, dir string, logf func(format string, args ...any)) ([]*yaml.RNode, error) {
	vars, err := declaredVars(mem, root)
	if err != nil {
		return nil, err
	}
	var rm resmap.ResMap
	said, err := captured(func() (err error) {
		defer buildMemoryLimit()()
		rm, err = krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(mem, dir)
		return err
	})
	if logf != nil {
		for _, l := range said {
			logf("kustomize: %s", l)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("kustomize build %s: %w", dir, err)
	}
	// The resources as nodes, not through YAML text: serialising and
	// parsing 611 objects again took 3 of Kubeflow's 8 build seconds.
	objs := rm.ToRNodeSlice()
	var bad []string
	for _, n := range objs {
		if v := unresolved(n, vars); v != "" {
			bad = append(bad, ObjectKey(n)+" holds "+v)
		}
	}
	if len(bad) > 0 {
		return nil, fmt.Errorf("kustomize build %s left %d object(s) with unresolved variables (not applied):\n  %s", dir, len(bad), strings.Join(bad, "\n  "))
	}
	return objs, nil
}

// buildLimit is the Go memory the collector aims to stay under while
// kustomize builds: most of what a build allocates is short-lived copies of
// every YAML node (its deAnchor of each file), and with the default GOGC
// the heap grew to about twice Kubeflow's live 110 MB before a collection.
const buildLimit = 224 << 20

// buildMemoryLimit sets the soft memory limit for a build, unless the user
// set one (GOMEMLIMIT), and returns what puts the previous one back. Soft:
// a heap that needs more gets it, the collector only runs more often.
func buildMemoryLimit() (restore func()) {
	prev := debug.SetMemoryLimit(-1)
	if prev != math.MaxInt64 {
		return func() {}
	}
	debug.SetMemoryLimit(buildLimit)
	return func() { debug.SetMemoryLimit(prev) }
}

// ObjectKey names an object: apiVersion/kind namespace/name.
func ObjectKey(n *yaml.RNode) string {
	return n.GetApiVersion() + "/" + n.GetKind() + " " + n.GetNamespace() + "/" + n.GetName()
}

var placeholder = regexp.MustCompile(`\$\(([A-Za-z0-9_.-]+)\)`)

// unresolved is the first kustomize variable left in n: any of vars
// anywhere, or any $(...) in its name, namespace, labels or annotations.
// Elsewhere $(NAME) is Kubernetes' own expansion (container command, args
// and env take $(POD_NAME)), not kustomize's.
func unresolved(n *yaml.RNode, vars map[string]bool) string {
	meta := n.GetName() + " " + n.GetNamespace()
	for k, v := range n.GetLabels() {
		meta += " " + k + "=" + v
	}
	for k, v := range n.GetAnnotations() {
		meta += " " + k + "=" + v
	}
	if m := placeholder.FindString(meta); m != "" {
		return m
	}
	return unresolvedIn(n.YNode(), vars)
}

// unresolvedIn is the first of vars in a key or value under y.
func unresolvedIn(y *yaml.Node, vars map[string]bool) string {
	if y == nil {
		return ""
	}
	if y.Kind == yaml.ScalarNode && strings.Contains(y.Value, "$(") {
		for _, m := range placeholder.FindAllStringSubmatch(y.Value, -1) {
			if vars[m[1]] {
				return m[0]
			}
		}
	}
	for _, c := range y.Content {
		if v := unresolvedIn(c, vars); v != "" {
			return v
		}
	}
	return ""
}

// declaredVars are the names of the tree's (deprecated) kustomize vars.
func declaredVars(mem filesys.FileSystem, root string) (map[string]bool, error) {
	out := map[string]bool{}
	err := eachKustomization(mem, root, func(_ string, k *yaml.RNode) (bool, error) {
		vars, err := k.Pipe(yaml.Lookup("vars"))
		if err != nil || vars == nil {
			return false, err
		}
		items, err := vars.Elements()
		if err != nil {
			return false, err
		}
		for _, v := range items {
			if name, _ := v.Pipe(yaml.Lookup("name")); name != nil {
				out[yaml.GetValue(name)] = true
			}
		}
		return false, nil
	})
	return out, err
}

// output serializes the builds whose output captured takes.
var output sync.Mutex

// captured runs fn with what it writes to os.Stderr and to the standard
// logger taken (kustomize writes its warnings there, not to an error or a
// logger it is given: the engine never prints), and returns those lines in
// order, each once, with its count when repeated.
func captured(fn func() error) ([]string, error) {
	output.Lock()
	defer output.Unlock()
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("capture kustomize's output: %w", err)
	}
	var lines []string
	count := map[string]int{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(r)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			l := strings.TrimSpace(sc.Text())
			if l == "" {
				continue
			}
			if count[l] == 0 {
				lines = append(lines, l)
			}
			count[l]++
		}
	}()
	stderr, logw, flags := os.Stderr, log.Writer(), log.Flags()
	os.Stderr = w
	log.SetOutput(w)
	log.SetFlags(0)
	err = fn()
	os.Stderr = stderr
	log.SetOutput(logw)
	log.SetFlags(flags)
	w.Close()
	<-done
	r.Close()
	for i, l := range lines {
		if n := count[l]; n > 1 {
			lines[i] = fmt.Sprintf("%s (%d times)", l, n)
		}
	}
	return lines, err
}
