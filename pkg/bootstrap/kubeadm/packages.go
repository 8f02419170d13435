package kubeadm

import (
	"cmp"
	"strings"

	"github.com/gpukit/gpukit/pkg/facts"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/scripts"
)

// PackageSets are the packages kubernetes/packages and kubernetes/containerd
// install on a host probed as f, by source (Sources decides them).
func PackageSets(inv *inventory.Inventory, f *facts.Facts) ([]scripts.PackageSet, error) {
	pk, ct, err := Sources(inv, f)
	if err != nil {
		return nil, err
	}
	// Below their mirrors' roots (spec.mirrors.kubernetes replaces
	// https://pkgs.k8s.io/, .docker https://download.docker.com/).
	kubePath := strings.TrimPrefix(pk.RepoURL, withSlash(cmp.Or(inv.Cluster.Spec.Mirrors.Kubernetes, DefaultPackagesURL)))
	out := []scripts.PackageSet{
		{Family: pk.Family, Repo: pk.RepoURL, Key: pk.Key, KeyURL: pk.RepoURL + pk.Key.File, Mirror: "kubernetes", Path: kubePath, KeyPath: kubePath + pk.Key.File, Names: pk.Packages, Version: pk.Version, For: "Kubernetes " + pk.Version},
		{Family: pk.Family, Repo: pk.RepoURL, Key: pk.Key, KeyURL: pk.RepoURL + pk.Key.File, Mirror: "kubernetes", Path: kubePath, KeyPath: kubePath + pk.Key.File, Names: pk.Extra, For: "Kubernetes " + pk.Version},
	}
	runtime := scripts.PackageSet{Family: ct.Family, Names: ct.Packages, Version: ct.Version, For: "containerd"}
	if ct.Source == scripts.ContainerdFromDocker {
		runtime.Repo, runtime.Key, runtime.KeyURL = ct.RepoURL, ct.Key, ct.RepoURL+ct.Key.File
		runtime.Mirror, runtime.Path = "docker", strings.TrimPrefix(ct.RepoURL, withSlash(cmp.Or(inv.Cluster.Spec.Mirrors.Docker, DefaultDockerURL)))
		runtime.KeyPath = runtime.Path + ct.Key.File
		runtime.Suite, runtime.Components = ct.Family.Codename, []string{"stable"}
	}
	return append(out, runtime,
		scripts.PackageSet{Family: ct.Family, Names: ct.Extra, For: "containerd's CNI plugins"}), nil
}
