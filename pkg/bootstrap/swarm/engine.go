package swarm

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/gpukit/gpukit/manifests"
	"github.com/gpukit/gpukit/pkg/facts"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/osfamily"
	"github.com/gpukit/gpukit/pkg/scripts"
)

// DockerURL is Docker's package server; spec.mirrors.docker replaces it.
const DockerURL = "https://download.docker.com/"

// Engine decides where a host's Docker engine comes from: Debian's own
// docker.io on Debian (what the distribution supports and security-patches),
// Docker's repository (or its mirror) on Ubuntu and RHEL, pinned to
// spec.versions.containerRuntime (default inventory.DefaultDockerVersion).
// On Debian the version is pinned only when the inventory names one.
func Engine(inv *inventory.Inventory, f *facts.Facts) (scripts.DockerEngineParams, error) {
	fam, err := f.OS.Family()
	if err != nil {
		return scripts.DockerEngineParams{}, err
	}
	v := inv.Cluster.Spec.Versions.ContainerRuntime
	if fam.Family == osfamily.Debian12 {
		return scripts.DockerEngineParams{Family: fam, Source: scripts.DockerDistribution, Version: v, Packages: []string{"docker.io"}}, nil
	}
	dir := "ubuntu"
	if fam.PackageManager == osfamily.Dnf {
		dir = "rhel"
	}
	base := cmp.Or(inv.Cluster.Spec.Mirrors.Docker, DockerURL)
	if !strings.HasSuffix(base, "/") {
		base += "/"
	}
	return scripts.DockerEngineParams{
		Family: fam, Source: scripts.DockerCE, RepoURL: base + "linux/" + dir + "/",
		Key:      inv.Cluster.Spec.Mirrors.SigningKey(manifests.RepoDocker, string(fam.PackageManager)),
		Version:  cmp.Or(v, inventory.DefaultDockerVersion),
		Packages: []string{"docker-ce", "docker-ce-cli"}, Extra: []string{"containerd.io"},
	}, nil
}

// enginePending says what is missing for the engine to be as decided, or ""
// when it is: every package installed (pinned ones at the version), held,
// and docker running.
func enginePending(e scripts.DockerEngineParams, s *State) string {
	for i, name := range append(append([]string{}, e.Packages...), e.Extra...) {
		p, ok := s.Packages[name]
		pinned := i < len(e.Packages)
		switch {
		case !ok:
			return name + " is not installed"
		case pinned && e.Version != "" && !osfamily.UpstreamMatches(p.Version, e.Version):
			return fmt.Sprintf("%s is %s, not %s", name, p.Version, e.Version)
		case !p.Held:
			return name + " is not held"
		}
	}
	if s.DockerActive != "active" {
		return "docker is " + cmp.Or(s.DockerActive, "not running")
	}
	return ""
}
