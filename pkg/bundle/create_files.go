package bundle

import (
	"archive/tar"
	"cmp"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"helm.sh/helm/v3/pkg/repo"

	"github.com/gpukit/gpukit/manifests"
	"github.com/gpukit/gpukit/pkg/atomicfile"
	"github.com/gpukit/gpukit/pkg/bundlefs"
	"github.com/gpukit/gpukit/pkg/charts"
	"github.com/gpukit/gpukit/pkg/download"
	"github.com/gpukit/gpukit/pkg/kubeflow"
)

// charts puts every chart's archive in charts/, as `helm pull` names it,
// checked as a run checks it (its pin, else its repository's digest), and
// indexes the directory: served, it is a Helm repository; copied, it is a
// chart directory (spec.mirrors.charts takes either).
func (c *creator) charts(ctx context.Context) error {
	src, access := charts.Source(c.inv.Cluster.Spec.Mirrors.Charts), charts.AccessOf(c.inv)
	any := false
	for _, a := range c.list.known(Chart) {
		ch := charts.Pinned(a.Name)
		if ch.Version != a.Version {
			c.miss("chart %s %s: the bill of materials pins %s", a.Name, a.Version, ch.Version)
			continue
		}
		any = true
		rel := bundlefs.ChartsDir + "/" + a.Name + "-" + a.Version + ".tgz"
		if c.have(rel, ch.SHA256) {
			continue
		}
		b, from := c.list.archives[ch.String()], "the list's rendering"
		if b == nil {
			var err error
			if b, from, err = src.Archive(ctx, ch, access); err != nil {
				c.miss("chart %s: %v", ch, err)
				continue
			}
		}
		if err := c.write(rel, b); err != nil {
			return err
		}
		c.fetched[Chart]++
		c.o.Logf("chart %s from %s", ch, from)
	}
	if !any {
		return nil
	}
	dir := filepath.Join(c.dir, bundlefs.ChartsDir)
	idx, err := repo.IndexDirectory(dir, "")
	if err != nil {
		return fmt.Errorf("charts: index: %w", err)
	}
	idx.SortEntries()
	// Its generated time would change the index, and the manifest, on
	// every run: the newest archive's time instead.
	idx.Generated = newest(dir)
	for _, versions := range idx.Entries {
		for _, v := range versions {
			v.Created = idx.Generated
		}
	}
	tmp := filepath.Join(dir, ".index.yaml.tmp")
	if err := idx.WriteFile(tmp, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, "index.yaml"))
}

// kubeflow puts the release's manifests in kubeflow/ as a tar.gz (from
// spec.kubeflow.manifests, else the tag's archive, checked against the
// bill's sha256 where it pins one) and the remote bases beside it, from
// spec.kubeflow.remoteBases: a bundle laid out by URL.
func (c *creator) kubeflow(ctx context.Context) error {
	k := c.inv.Cluster.Spec.Kubeflow
	for _, a := range c.list.known(Manifests) {
		rel := bundlefs.KubeflowManifests(a.Version)
		if c.have(rel, "") {
			continue
		}
		src := k.Manifests
		if src == "" {
			f, err := download.ToFile(ctx, download.Request{URL: kubeflow.UpstreamArchive(a.Version), Max: 512 << 20, SHA256: manifests.Bill().KubeflowSHA256(a.Version)}, "gpukit-kubeflow-*.tar.gz")
			if err != nil {
				c.miss("kubeflow/manifests %s: %v", a.Version, err)
				continue
			}
			defer os.Remove(f)
			src = f
		}
		if err := c.copyTree(src, rel); err != nil {
			c.miss("kubeflow/manifests %s: %v", a.Version, err)
			continue
		}
		c.fetched[Manifests]++
	}
	remote := c.list.known(RemoteBase)
	if len(remote) == 0 {
		return nil
	}
	if k.RemoteBases == "" {
		for _, a := range remote {
			c.miss("remote base %s: gpukit fetches no remote base itself; give the bundle of the release's remote bases (spec.kubeflow.remoteBases)", a.Name)
		}
		return nil
	}
	rel := bundlefs.KubeflowRemoteBases
	if c.have(rel, "") {
		return nil
	}
	if err := c.copyTree(k.RemoteBases, rel); err != nil {
		c.miss("the remote bases of Kubeflow: %v", err)
		return nil
	}
	c.fetched[Manifests]++
	return nil
}

// copyTree puts src, a .tar.gz or a directory, at rel as a .tar.gz.
func (c *creator) copyTree(src, rel string) error {
	st, err := os.Stat(src)
	if err != nil {
		return err
	}
	dst := filepath.Join(c.dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	return atomicfile.WriteFunc(dst, 0o644, func(w io.Writer) error {
		if !st.IsDir() {
			f, err := os.Open(src)
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = io.Copy(w, f)
			return err
		}
		return tarGz(w, src)
	})
}

// tarGz writes the tree at dir as a gzipped tar of its contents.
func tarGz(w io.Writer, dir string) error {
	zw := gzip.NewWriter(w)
	tw := tar.NewWriter(zw)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		info, err := d.Info()
		if err != nil {
			return err
		}
		if !info.Mode().IsRegular() && !info.IsDir() {
			return nil // links and devices have no place in manifests
		}
		h, err := tar.FileInfoHeader(info, "")
		if err != nil {
			return err
		}
		h.Name, h.Uid, h.Gid, h.Uname, h.Gname = filepath.ToSlash(rel), 0, 0, "", ""
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if info.IsDir() {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(tw, f)
		return err
	})
	return cmp.Or(err, tw.Close(), zw.Close())
}

// newest is the modification time of the newest archive in dir.
func newest(dir string) time.Time {
	var t time.Time
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if info, err := e.Info(); err == nil && filepath.Ext(e.Name()) == ".tgz" && info.ModTime().After(t) {
			t = info.ModTime()
		}
	}
	return t.UTC().Truncate(time.Second)
}
