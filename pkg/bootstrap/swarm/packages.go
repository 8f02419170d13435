package swarm

import (
	"cmp"
	"strings"

	"github.com/gpukit/gpukit/pkg/facts"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/scripts"
)

// PackageSets are the packages swarm/engine installs on a host probed as f
// (Engine decides them).
func PackageSets(inv *inventory.Inventory, f *facts.Facts) ([]scripts.PackageSet, error) {
	e, err := Engine(inv, f)
	if err != nil {
		return nil, err
	}
	set := scripts.PackageSet{Family: e.Family, Names: e.Packages, Version: e.Version, For: "Docker engine"}
	if e.Source == scripts.DockerCE {
		set.Repo, set.Key, set.KeyURL, set.Suite, set.Components = e.RepoURL, e.Key, e.RepoURL+e.Key.File, e.Family.Codename, []string{"stable"}
		base := cmp.Or(inv.Cluster.Spec.Mirrors.Docker, DockerURL)
		if !strings.HasSuffix(base, "/") {
			base += "/"
		}
		set.Mirror, set.Path = "docker", strings.TrimPrefix(e.RepoURL, base)
		set.KeyPath = set.Path + e.Key.File
	}
	out := []scripts.PackageSet{set}
	if len(e.Extra) > 0 {
		extra := set
		extra.Names, extra.Version = e.Extra, ""
		out = append(out, extra)
	}
	return out, nil
}
