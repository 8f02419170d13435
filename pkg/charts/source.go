// Package charts installs the cluster's add-ons as Helm releases with the
// Helm SDK: each chart is found in its upstream repository, a mirror
// repository, or a local directory of chart archives (air-gapped sites),
// and a release that is already as wanted is left alone.
package charts

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/repo"

	"github.com/gpukit/gpukit/manifests"
	"github.com/gpukit/gpukit/pkg/download"
)

// Chart is one chart at one version, and the repository it is published in.
type Chart struct {
	Name, Version string
	// Repo is the upstream Helm repository (its index.yaml is there).
	Repo string
	// SHA256 is the digest of its archive as published, when pinned: an
	// archive with another is refused, wherever it comes from. Unpinned,
	// a repository's archive must match its index's digest.
	SHA256 string `json:",omitempty" yaml:",omitempty"`
}

func (c Chart) String() string { return c.Name + " " + c.Version }

// Pinned is the chart called name as the bill of materials pins it
// (manifests/bom.yaml); a name the bill lacks is a defect and panics.
func Pinned(name string) Chart {
	c := manifests.Bill().Chart(name)
	return Chart{Name: c.Name, Version: c.Version, Repo: c.Repo, SHA256: c.SHA256}
}

// Source is where charts come from: "" for each chart's own repository, an
// http(s) URL of a Helm repository that holds them all (spec.mirrors.charts),
// an oci:// registry repository holding them as `helm push` stores them
// (NAME:VERSION below it), or a local directory (an absolute path or file://
// URL) of archives named NAME-VERSION.tgz as `helm pull` saves them.
type Source string

// dir is the local directory the source names, if it names one.
func (s Source) dir() (string, bool) {
	d, ok := strings.CutPrefix(string(s), "file://")
	if ok || strings.HasPrefix(string(s), "/") {
		return d, true
	}
	return "", false
}

// Bounds of what a repository serves: its index (the biggest public ones
// are tens of MiB) and one chart's archive.
const (
	maxIndex   = 128 << 20
	maxArchive = 64 << 20
)

// Load finds c at its version and loads it.
func (s Source) Load(ctx context.Context, c Chart) (*chart.Chart, error) {
	return s.LoadWith(ctx, c, Access{})
}

// LoadWith is Load with a's CA and login for an oci:// source.
func (s Source) LoadWith(ctx context.Context, c Chart, a Access) (*chart.Chart, error) {
	ch, _, err := s.Fetch(ctx, c, a)
	return ch, err
}

// Fetch is c loaded, and its archive as the source holds it (checked as
// Archive checks it): what loads a chart and keeps it (gpukit bundle)
// fetches it once. The archive is nil where a local source holds c as a
// directory.
func (s Source) Fetch(ctx context.Context, c Chart, a Access) (*chart.Chart, []byte, error) {
	if dir, ok := s.dir(); ok {
		ch, err := loadFromDir(dir, c)
		if err != nil {
			return nil, nil, err
		}
		// read again from this machine's disk, where it is one (none for
		// a chart directory)
		b, _, err := s.Archive(ctx, c, a)
		if err != nil {
			b = nil
		}
		return ch, b, nil
	}
	b, from, err := s.Archive(ctx, c, a)
	if err != nil {
		return nil, nil, err
	}
	ch, err := loader.LoadArchive(bytes.NewReader(b))
	if err != nil {
		return nil, nil, fmt.Errorf("chart %s from %s: %w", c, from, err)
	}
	if ch, err = checked(ch, c, from); err != nil {
		return nil, nil, err
	}
	return ch, b, nil
}

// Archive is c's archive as the source holds it, checked as Load checks it
// (the pinned sha256, else the repository's digest), and where it came
// from: what a bundle keeps.
func (s Source) Archive(ctx context.Context, c Chart, a Access) ([]byte, string, error) {
	if dir, ok := s.dir(); ok {
		for _, p := range archivesIn(dir, c) {
			if _, err := os.Stat(p); err != nil {
				continue
			}
			b, err := os.ReadFile(p)
			if err == nil && c.SHA256 != "" {
				err = download.CheckFile(p, c.SHA256)
			}
			if err != nil {
				return nil, "", fmt.Errorf("chart %s: %w", c, err)
			}
			return b, p, nil
		}
		return nil, "", fmt.Errorf("chart %s: no %s-%s.tgz in %s", c, c.Name, c.Version, dir)
	}
	if strings.HasPrefix(string(s), "oci://") {
		if err := ctx.Err(); err != nil {
			return nil, "", err
		}
		return pullOCI(string(s), c, a)
	}
	repoURL := c.Repo
	if s != "" {
		repoURL = string(s)
	}
	cv, err := find(ctx, repoURL, c)
	if err != nil {
		return nil, "", fmt.Errorf("chart %s in %s: %w", c, repoURL, err)
	}
	url, err := repo.ResolveReferenceURL(repoURL, cv.URLs[0])
	if err != nil {
		return nil, "", fmt.Errorf("chart %s in %s: %w", c, repoURL, err)
	}
	want := c.SHA256
	if want == "" {
		want = cv.Digest
	}
	b, err := download.Get(ctx, download.Request{URL: url, Max: maxArchive, SHA256: want})
	if err != nil {
		return nil, "", fmt.Errorf("chart %s: %w", c, err)
	}
	return b, url, nil
}

// archivesIn are the names `helm pull` gives c's archive in dir (a v in
// the version or not).
func archivesIn(dir string, c Chart) []string {
	return []string{filepath.Join(dir, c.Name+"-"+c.Version+".tgz"), filepath.Join(dir, c.Name+"-"+strings.TrimPrefix(c.Version, "v")+".tgz")}
}

// find reads the repository's index and c's entry in it.
func find(ctx context.Context, repoURL string, c Chart) (*repo.ChartVersion, error) {
	b, err := download.Get(ctx, download.Request{URL: strings.TrimSuffix(repoURL, "/") + "/index.yaml", Max: maxIndex})
	if err != nil {
		return nil, err
	}
	// Helm reads an index from a file only.
	f, err := os.CreateTemp("", "gpukit-index-*.yaml")
	if err != nil {
		return nil, err
	}
	defer os.Remove(f.Name())
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	idx, err := repo.LoadIndexFile(f.Name())
	if err != nil {
		return nil, fmt.Errorf("not a chart repository: %w", err)
	}
	cv, err := idx.Get(c.Name, c.Version)
	if err != nil || len(cv.URLs) == 0 {
		return nil, fmt.Errorf("chart %q version %q not found in its index", c.Name, c.Version)
	}
	return cv, nil
}

// loadFromDir takes NAME-VERSION.tgz (or a NAME directory) from dir.
func loadFromDir(dir string, c Chart) (*chart.Chart, error) {
	for _, p := range append(archivesIn(dir, c), filepath.Join(dir, c.Name)) {
		fi, err := os.Stat(p)
		if err != nil {
			continue
		}
		switch {
		case c.SHA256 != "" && fi.IsDir():
			return nil, fmt.Errorf("chart %s: %s is a directory, which its pinned sha256 cannot check: put the archive there", c, p)
		case c.SHA256 != "":
			if err := download.CheckFile(p, c.SHA256); err != nil {
				return nil, fmt.Errorf("chart %s: %w", c, err)
			}
		}
		ch, err := loader.Load(p)
		if err != nil {
			return nil, fmt.Errorf("chart %s: %w", c, err)
		}
		return checked(ch, c, p)
	}
	return nil, fmt.Errorf("chart %s: no %s-%s.tgz in %s", c, c.Name, c.Version, dir)
}

// checked refuses a chart that is not the one asked for (a mirror holding
// another version under the name).
func checked(ch *chart.Chart, c Chart, from string) (*chart.Chart, error) {
	if ch.Metadata == nil || ch.Metadata.Name != c.Name || strings.TrimPrefix(ch.Metadata.Version, "v") != strings.TrimPrefix(c.Version, "v") {
		got := "no metadata"
		if ch.Metadata != nil {
			got = ch.Metadata.Name + " " + ch.Metadata.Version
		}
		return nil, fmt.Errorf("%s holds chart %s, not %s", from, got, c)
	}
	return ch, nil
}
