// Package charts installs the cluster's add-ons as Helm releases with the
// Helm SDK: each chart is found in its upstream repository, a mirror
// repository, or a local directory of chart archives (air-gapped sites),
// and a release that is already as wanted is left alone.
package charts

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/cli"
	"helm.sh/helm/v3/pkg/getter"
	"helm.sh/helm/v3/pkg/repo"

	"github.com/gpukit/gpukit/manifests"
)

// Chart is one chart at one version, and the repository it is published in.
type Chart struct {
	Name, Version string
	// Repo is the upstream Helm repository (its index.yaml is there).
	Repo string
}

func (c Chart) String() string { return c.Name + " " + c.Version }

// Pinned is the chart called name as the bill of materials pins it
// (manifests/bom.yaml); a name the bill lacks is a defect and panics.
func Pinned(name string) Chart {
	c := manifests.Bill().Chart(name)
	return Chart{Name: c.Name, Version: c.Version, Repo: c.Repo}
}

// Source is where charts come from: "" for each chart's own repository, an
// http(s) URL of a Helm repository that holds them all (spec.mirrors.charts),
// or a local directory (an absolute path or file:// URL) of archives named
// NAME-VERSION.tgz as `helm pull` saves them.
type Source string

// dir is the local directory the source names, if it names one.
func (s Source) dir() (string, bool) {
	d, ok := strings.CutPrefix(string(s), "file://")
	if ok || strings.HasPrefix(string(s), "/") {
		return d, true
	}
	return "", false
}

// Load finds c at its version and loads it.
func (s Source) Load(ctx context.Context, c Chart) (*chart.Chart, error) {
	if dir, ok := s.dir(); ok {
		return loadFromDir(dir, c)
	}
	repoURL := c.Repo
	if s != "" {
		repoURL = string(s)
	}
	cache, err := os.MkdirTemp("", "gpukit-charts-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(cache)
	settings := cli.New()
	settings.RepositoryCache = cache
	settings.RepositoryConfig = filepath.Join(cache, "repositories.yaml")
	providers := getter.All(settings)
	url, err := repo.FindChartInRepoURL(repoURL, c.Name, c.Version, "", "", "", providers)
	if err != nil {
		return nil, fmt.Errorf("chart %s in %s: %w", c, repoURL, err)
	}
	b, err := fetch(ctx, url)
	if err != nil {
		return nil, fmt.Errorf("chart %s: %w", c, err)
	}
	ch, err := loader.LoadArchive(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("chart %s from %s: %w", c, url, err)
	}
	return checked(ch, c, url)
}

// loadFromDir takes NAME-VERSION.tgz (or a NAME directory) from dir.
func loadFromDir(dir string, c Chart) (*chart.Chart, error) {
	for _, p := range []string{
		filepath.Join(dir, c.Name+"-"+c.Version+".tgz"),
		filepath.Join(dir, c.Name+"-"+strings.TrimPrefix(c.Version, "v")+".tgz"),
		filepath.Join(dir, c.Name),
	} {
		if _, err := os.Stat(p); err != nil {
			continue
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

// fetch downloads a chart archive (its URL may be relative to nothing:
// FindChartInRepoURL resolves it against the repository).
func fetch(ctx context.Context, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return io.ReadAll(io.LimitReader(resp.Body, 64<<20))
}
