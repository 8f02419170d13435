package kubeflow

import (
	"context"
	"fmt"
	"os"
	"path"
	"sort"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/gpukit/gpukit/manifests"
	"github.com/gpukit/gpukit/pkg/download"
)

// Manifests says where a Kubeflow release's manifests come from.
type Manifests struct {
	// Version is the kubeflow/manifests tag (inventory spec.kubeflow.version).
	Version string
	// Source is a tarball or directory of the tag's tree (--manifests);
	// "" downloads the tag's archive from GitHub.
	Source string
	// RemoteBases is the bundle of the remote bases the release's example
	// references, laid out by URL (--remote-bases; a tarball or directory).
	RemoteBases string
}

// UpstreamArchive is the tag's source archive, as the bill of materials
// names it.
func UpstreamArchive(version string) string { return manifests.Bill().KubeflowArchive(version) }

// Load builds the release's example, as the upstream installer does,
// in-process: every object, refused when one holds an unresolved variable;
// kustomize's warnings go to logf (nil: dropped).
func (m Manifests) Load(ctx context.Context, logf func(format string, args ...any)) ([]*yaml.RNode, error) {
	t, err := m.tree(ctx)
	if err != nil {
		return nil, err
	}
	if err := ResolveRemote(t.mem, t.example, t.bundle); err != nil {
		return nil, err
	}
	return Build(t.mem, t.root, t.example, logf)
}

// Contents is what the release deploys, for a bundle: the remote resources
// its example reaches, and its objects, built as Load builds them; no
// objects, and why, when the remote resources are not at hand (no
// RemoteBases).
func (m Manifests) Contents(ctx context.Context, logf func(format string, args ...any)) (remote []Remote, objs []*yaml.RNode, why string, err error) {
	t, err := m.tree(ctx)
	if err != nil {
		return nil, nil, "", err
	}
	if remote, err = RemoteRefs(t.mem, t.example); err != nil {
		return nil, nil, "", err
	}
	if len(remote) > 0 && t.bundle == "" {
		return remote, nil, fmt.Sprintf("its example reaches %d remote resources and no remote-bases bundle is given (spec.kubeflow.remoteBases)", len(remote)), nil
	}
	if err := ResolveRemote(t.mem, t.example, t.bundle); err != nil {
		return remote, nil, "", err
	}
	objs, err = Build(t.mem, t.root, t.example, logf)
	return remote, objs, "", err
}

// tree is a release's manifests in memory, with its remote-bases bundle.
type tree struct {
	mem                   filesys.FileSystem
	root, example, bundle string
}

func (m Manifests) tree(ctx context.Context) (*tree, error) {
	src := m.Source
	if src == "" {
		f, err := download.ToFile(ctx, download.Request{URL: UpstreamArchive(m.Version), Max: maxTreeBytes, SHA256: manifests.Bill().KubeflowSHA256(m.Version)}, "gpukit-kubeflow-*.tar.gz")
		if err != nil {
			return nil, fmt.Errorf("kubeflow %s: %w (an air-gapped site gives the tag's tree with --manifests)", m.Version, err)
		}
		defer os.Remove(f)
		src = f
	}
	mem, err := LoadTree(src, "/kf")
	if err != nil {
		return nil, err
	}
	root, err := manifestsRoot(mem, "/kf")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", m.Source, err)
	}
	t := &tree{mem: mem, root: root, example: path.Join(root, "example")}
	if m.RemoteBases != "" {
		if err := loadTreeInto(mem, m.RemoteBases, "/remote-bases"); err != nil {
			return nil, err
		}
		t.bundle = "/remote-bases"
	}
	return t, nil
}

// manifestsRoot is the directory of the tree that holds example/: the
// tarball's top directory (manifests-26.03/ in GitHub's archives).
func manifestsRoot(mem filesys.FileSystem, top string) (string, error) {
	if kustomizationIn(mem, path.Join(top, "example")) != "" {
		return top, nil
	}
	entries, err := mem.ReadDir(top)
	if err != nil {
		return "", err
	}
	sort.Strings(entries)
	for _, e := range entries {
		dir := path.Join(top, e)
		if mem.IsDir(dir) && kustomizationIn(mem, path.Join(dir, "example")) != "" {
			return dir, nil
		}
	}
	return "", fmt.Errorf("no example/kustomization.yaml at the top of the tree or one directory below: not a kubeflow/manifests tree")
}

// Summary counts objects per kind, for a plan: "CustomResourceDefinition 71, Deployment 58, ...".
func Summary(objs []*yaml.RNode) string {
	n := map[string]int{}
	for _, o := range objs {
		n[o.GetKind()]++
	}
	kinds := make([]string, 0, len(n))
	for k := range n {
		kinds = append(kinds, k)
	}
	sort.Slice(kinds, func(i, j int) bool {
		if n[kinds[i]] != n[kinds[j]] {
			return n[kinds[i]] > n[kinds[j]]
		}
		return kinds[i] < kinds[j]
	})
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		parts[i] = fmt.Sprintf("%s %d", k, n[k])
	}
	return strings.Join(parts, ", ")
}
