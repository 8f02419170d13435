package kubeflow

import (
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// kustomizationNames are the file names kustomize reads in a directory, in
// the order it looks for them.
var kustomizationNames = []string{"kustomization.yaml", "kustomization.yml", "Kustomization"}

// eachKustomization calls edit with every kustomization file below root,
// parsed; what edit reports changed is written back.
func eachKustomization(mem filesys.FileSystem, root string, edit func(file string, k *yaml.RNode) (bool, error)) error {
	var files []string
	err := mem.Walk(root, func(p string, info fs.FileInfo, err error) error {
		if err == nil && !info.IsDir() && slices.Contains(kustomizationNames, path.Base(p)) {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		return err
	}
	sort.Strings(files)
	for _, f := range files {
		b, err := mem.ReadFile(f)
		if err != nil {
			return err
		}
		k, err := yaml.Parse(string(b))
		if err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		changed, err := edit(f, k)
		if err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		if changed {
			if err := mem.WriteFile(f, []byte(k.MustString())); err != nil {
				return err
			}
		}
	}
	return nil
}

// QuoteLiteralSelectors makes replacement target selectors match the names
// their authors wrote. kustomize 5.5+ (the API v0.21 line Helm's modules
// bring) reads select.name and reject.name as anchored regular
// expressions, so a kfctl-era placeholder name such as $(profile-name) no
// longer matches itself and the replacement silently does nothing (Kubeflow
// v1.10.2's user Profile then keeps the name $(profile-name) and the API
// server refuses it); kustomize 5.4 matched it literally. A name that does
// not match itself as a regular expression is quoted. It returns what it
// changed, file: name.
func QuoteLiteralSelectors(mem filesys.FileSystem, root string) ([]string, error) {
	var fixed []string
	err := eachKustomization(mem, root, func(file string, k *yaml.RNode) (bool, error) {
		repl, err := k.Pipe(yaml.Lookup("replacements"))
		if err != nil || repl == nil {
			return false, err
		}
		changed := false
		items, err := repl.Elements()
		if err != nil {
			return false, err
		}
		for _, r := range items {
			targets, _ := r.Pipe(yaml.Lookup("targets"))
			if targets == nil {
				continue
			}
			ts, _ := targets.Elements()
			for _, t := range ts {
				for _, sel := range selectorsOf(t) {
					name, _ := sel.Pipe(yaml.Lookup("name"))
					if name == nil {
						continue
					}
					v := yaml.GetValue(name)
					if v == "" || matchesItself(v) {
						continue
					}
					if err := sel.PipeE(yaml.SetField("name", yaml.NewStringRNode(regexp.QuoteMeta(v)))); err != nil {
						return false, err
					}
					fixed = append(fixed, file+": "+v)
					changed = true
				}
			}
		}
		return changed, nil
	})
	return fixed, err
}

// selectorsOf is a replacement target's select and its rejects.
func selectorsOf(t *yaml.RNode) []*yaml.RNode {
	var out []*yaml.RNode
	if s, _ := t.Pipe(yaml.Lookup("select")); s != nil {
		out = append(out, s)
	}
	if r, _ := t.Pipe(yaml.Lookup("reject")); r != nil {
		rs, _ := r.Elements()
		out = append(out, rs...)
	}
	return out
}

// matchesItself: name as kustomize reads it (an anchored regular
// expression) selects an object called name, or it is quoted already.
func matchesItself(name string) bool {
	re, err := regexp.Compile("^(?:" + name + ")$")
	if err != nil {
		return false
	}
	if re.MatchString(name) {
		return true
	}
	lit, ok := literalOf(name)
	return ok && regexp.QuoteMeta(lit) == name
}

// literalOf undoes regexp.QuoteMeta; false when s has a backslash that
// escapes no metacharacter.
func literalOf(s string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			b.WriteByte(s[i])
			continue
		}
		if i+1 == len(s) || !strings.ContainsRune(`\.+*?()|[]{}^$`, rune(s[i+1])) {
			return "", false
		}
		i++
		b.WriteByte(s[i])
	}
	return b.String(), true
}

// remoteRef is a kustomization resource that kustomize would fetch.
func remoteRef(s string) bool {
	return strings.Contains(s, "://") || strings.HasPrefix(s, "github.com/") || strings.HasPrefix(s, "gitlab.com/") || strings.HasPrefix(s, "git@")
}

// bundlePath is where a remote reference lies in a bundle laid out by URL:
// host/org/repo@REF/dir for a repository (github.com/org/repo//dir?ref=REF,
// or github.com/org/repo/dir?ref=REF), host/path for a file URL.
func bundlePath(ref string) string {
	s := ref
	if i := strings.Index(s, "://"); i >= 0 {
		s = s[i+3:]
	}
	s, query, _ := strings.Cut(s, "?")
	version := ""
	for _, kv := range strings.Split(query, "&") {
		if v, ok := strings.CutPrefix(kv, "ref="); ok {
			version = v
		} else if v, ok := strings.CutPrefix(kv, "version="); ok {
			version = v
		}
	}
	if version == "" {
		return path.Clean(s)
	}
	repo, dir, ok := strings.Cut(s, "//")
	if !ok {
		parts := strings.SplitN(s, "/", 4)
		if len(parts) < 3 {
			return path.Clean(s)
		}
		repo = strings.Join(parts[:3], "/")
		if len(parts) == 4 {
			dir = parts[3]
		}
	}
	repo = strings.TrimSuffix(repo, ".git")
	return path.Clean(repo + "@" + version + "/" + dir)
}

// ResolveRemote rewrites every remote resource of the kustomizations the
// build of dir reaches (its own and those of its local resources, bases
// and components, recursively) to its copy in the bundle at bundleRoot (in
// the same file system), as a path relative to the kustomization: kustomize
// refuses absolute directories. Every reference the bundle lacks (all of
// them, with no bundle: bundleRoot "") is named in one error, instead of
// kustomize failing on the first it cannot fetch.
func ResolveRemote(mem filesys.FileSystem, dir, bundleRoot string) error {
	var missing []string
	err := eachRemote(mem, dir, func(dir, file, ref string) (string, error) {
		at := memPath(path.Join(bundleRoot, bundlePath(ref)))
		if bundleRoot == "" || !mem.Exists(at) {
			missing = append(missing, fmt.Sprintf("%s: %s (%s in a bundle laid out by URL)", file, ref, bundlePath(ref)))
			return "", nil
		}
		rel, err := relPath(dir, at)
		if err != nil {
			return "", err
		}
		if !mem.IsDir(at) {
			// kustomize takes files only in or below the
			// kustomization's directory (directories are roots
			// of their own): the file is copied there.
			b, err := mem.ReadFile(at)
			if err != nil {
				return "", err
			}
			rel = "remote-" + strings.ReplaceAll(memPath(bundlePath(ref)), "/", "_")
			if err := mem.WriteFile(path.Join(dir, rel), b); err != nil {
				return "", err
			}
		}
		return rel, nil
	})
	if err != nil {
		return err
	}
	if len(missing) > 0 {
		return fmt.Errorf("%d remote reference(s) cannot be fetched offline and are not in the remote-bases bundle:\n  %s", len(missing), strings.Join(missing, "\n  "))
	}
	return nil
}

// Remote is a remote resource a release's build reaches: the reference as
// its kustomization writes it, and where a bundle laid out by URL keeps it.
type Remote struct {
	Ref  string `json:"ref"`
	Path string `json:"path"`
}

// RemoteRefs are the remote resources the build of dir reaches, each once,
// in the order met.
func RemoteRefs(mem filesys.FileSystem, dir string) ([]Remote, error) {
	var out []Remote
	seen := map[string]bool{}
	err := eachRemote(mem, dir, func(_, _, ref string) (string, error) {
		if !seen[ref] {
			seen[ref] = true
			out = append(out, Remote{Ref: ref, Path: bundlePath(ref)})
		}
		return "", nil
	})
	return out, err
}

// eachRemote calls fn with every remote resource of the kustomizations the
// build of dir reaches (its own and those of its local resources, bases
// and components, recursively): the kustomization's directory and file and
// the reference. A path fn returns replaces the reference in the file.
func eachRemote(mem filesys.FileSystem, dir string, fn func(dir, file, ref string) (string, error)) error {
	seen := map[string]bool{}
	var visit func(dir string) error
	visit = func(dir string) error {
		if seen[dir] {
			return nil
		}
		seen[dir] = true
		file := kustomizationIn(mem, dir)
		if file == "" {
			return nil
		}
		b, err := mem.ReadFile(file)
		if err != nil {
			return err
		}
		k, err := yaml.Parse(string(b))
		if err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		changed := false
		var local []string
		for _, field := range []string{"resources", "bases", "components"} {
			list, err := k.Pipe(yaml.Lookup(field))
			if err != nil || list == nil {
				continue
			}
			items, err := list.Elements()
			if err != nil {
				return fmt.Errorf("%s: %s: %w", file, field, err)
			}
			for _, it := range items {
				ref := yaml.GetValue(it)
				if !remoteRef(ref) {
					local = append(local, path.Join(dir, ref))
					continue
				}
				rel, err := fn(dir, file, ref)
				if err != nil {
					return err
				}
				if rel != "" {
					it.YNode().Value = rel
					changed = true
				}
			}
		}
		if changed {
			if err := mem.WriteFile(file, []byte(k.MustString())); err != nil {
				return err
			}
		}
		for _, l := range local {
			if mem.IsDir(l) {
				if err := visit(l); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return visit(path.Clean(dir))
}

// kustomizationIn is dir's kustomization file ("" when it has none).
func kustomizationIn(mem filesys.FileSystem, dir string) string {
	for _, n := range kustomizationNames {
		if p := path.Join(dir, n); mem.Exists(p) && !mem.IsDir(p) {
			return p
		}
	}
	return ""
}

// relPath is target relative to dir, both absolute slash paths.
func relPath(dir, target string) (string, error) {
	d := strings.Split(strings.Trim(path.Clean(dir), "/"), "/")
	t := strings.Split(strings.Trim(path.Clean(target), "/"), "/")
	i := 0
	for i < len(d) && i < len(t) && d[i] == t[i] {
		i++
	}
	up := make([]string, 0, len(d)-i)
	for range d[i:] {
		up = append(up, "..")
	}
	rel := path.Join(append(up, t[i:]...)...)
	if rel == "" {
		return "", fmt.Errorf("%s is the kustomization's own directory", target)
	}
	return rel, nil
}
