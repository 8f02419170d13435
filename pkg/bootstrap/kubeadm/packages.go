package kubeadm

import (
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
	out := []scripts.PackageSet{
		{Family: pk.Family, Repo: pk.RepoURL, Key: pk.Key, Names: pk.Packages, Version: pk.Version, For: "Kubernetes " + pk.Version},
		{Family: pk.Family, Repo: pk.RepoURL, Key: pk.Key, Names: pk.Extra, For: "Kubernetes " + pk.Version},
	}
	runtime := scripts.PackageSet{Family: ct.Family, Names: ct.Packages, Version: ct.Version, For: "containerd"}
	if ct.Source == scripts.ContainerdFromDocker {
		runtime.Repo, runtime.Key = ct.RepoURL, ct.Key
		runtime.Suite, runtime.Components = ct.Family.Codename, []string{"stable"}
	}
	return append(out, runtime,
		scripts.PackageSet{Family: ct.Family, Names: ct.Extra, For: "containerd's CNI plugins"}), nil
}
