package swarm

import (
	"reflect"
	"testing"

	"github.com/gpukit/gpukit/manifests"
	"github.com/gpukit/gpukit/pkg/facts"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/scripts"
)

func TestEngine(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, osID, osVersion, version, mirror, siteKey string
		want                                            scripts.DockerEngineParams
	}{
		{name: "Debian: its docker.io, unpinned", osID: "debian", osVersion: "12",
			want: scripts.DockerEngineParams{Source: scripts.DockerDistribution, Packages: []string{"docker.io"}}},
		{name: "Debian: pinned when the inventory says", osID: "debian", osVersion: "12", version: "20.10.24",
			want: scripts.DockerEngineParams{Source: scripts.DockerDistribution, Version: "20.10.24", Packages: []string{"docker.io"}}},
		{name: "Ubuntu: Docker's repository at the default version", osID: "ubuntu", osVersion: "24.04",
			want: scripts.DockerEngineParams{Source: scripts.DockerCE, RepoURL: "https://download.docker.com/linux/ubuntu/", Version: inventory.DefaultDockerVersion,
				Key:      manifests.SigningKey{Repository: "docker", PackageManager: "apt", File: "gpg", Fingerprints: []string{"9DC858229FC7DD38854AE2D88D81803C0EBFCD88"}},
				Packages: []string{"docker-ce", "docker-ce-cli"}, Extra: []string{"containerd.io"}}},
		{name: "Rocky: a mirror", osID: "rocky", osVersion: "9.4", version: "27.5.1", mirror: "http://mirror.local/docker",
			want: scripts.DockerEngineParams{Source: scripts.DockerCE, RepoURL: "http://mirror.local/docker/linux/rhel/", Version: "27.5.1",
				Key:      manifests.SigningKey{Repository: "docker", PackageManager: "dnf", File: "gpg", Fingerprints: []string{"060A61C51B558A7F742B77AAC52FEB6B621E9F35"}},
				Packages: []string{"docker-ce", "docker-ce-cli"}, Extra: []string{"containerd.io"}}},
		{name: "Ubuntu: a mirror re-signed by the site", osID: "ubuntu", osVersion: "22.04", mirror: "https://mirror.local/docker", siteKey: "5a3c 0f1e 77b2 9d44 8e61  c0a9 3b7d 2e5f 9911 ab02",
			want: scripts.DockerEngineParams{Source: scripts.DockerCE, RepoURL: "https://mirror.local/docker/linux/ubuntu/", Version: inventory.DefaultDockerVersion,
				Key:      manifests.SigningKey{Repository: "docker", PackageManager: "apt", File: "gpg", Fingerprints: []string{"5A3C0F1E77B29D448E61C0A93B7D2E5F9911AB02"}},
				Packages: []string{"docker-ce", "docker-ce-cli"}, Extra: []string{"containerd.io"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			inv := &inventory.Inventory{}
			inv.Cluster.Spec.Versions.ContainerRuntime = tt.version
			inv.Cluster.Spec.Mirrors.Docker = tt.mirror
			if tt.siteKey != "" {
				inv.Cluster.Spec.Mirrors.SigningKeys.Docker = []string{tt.siteKey}
			}
			got, err := Engine(inv, &facts.Facts{OS: facts.OS{ID: tt.osID, Version: tt.osVersion}})
			if err != nil {
				t.Fatal(err)
			}
			tt.want.Family = got.Family
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v\nwant %+v", got, tt.want)
			}
			if _, err := scripts.DockerEngine(got); err != nil {
				t.Errorf("the decision does not render: %v", err)
			}
		})
	}
	if _, err := Engine(&inventory.Inventory{}, &facts.Facts{OS: facts.OS{ID: "arch"}}); err == nil {
		t.Error("an unsupported OS got an engine")
	}
}

func TestEnginePending(t *testing.T) {
	t.Parallel()
	ce := scripts.DockerEngineParams{Version: "28.2.2", Packages: []string{"docker-ce", "docker-ce-cli"}, Extra: []string{"containerd.io"}}
	ok := map[string]Package{
		"docker-ce":     {Version: "5:28.2.2-1~ubuntu.24.04~noble", Held: true},
		"docker-ce-cli": {Version: "5:28.2.2-1~ubuntu.24.04~noble", Held: true},
		"containerd.io": {Version: "1.7.27-1", Held: true},
	}
	with := func(name string, p Package) map[string]Package {
		m := map[string]Package{}
		for k, v := range ok {
			m[k] = v
		}
		m[name] = p
		return m
	}
	tests := []struct {
		name   string
		e      scripts.DockerEngineParams
		s      State
		reason string
	}{
		{"converged", ce, State{Packages: ok, DockerActive: "active"}, ""},
		{"another version", ce, State{Packages: with("docker-ce", Package{Version: "5:27.5.1-1~ubuntu.24.04~noble", Held: true}), DockerActive: "active"}, "docker-ce is 5:27.5.1-1~ubuntu.24.04~noble, not 28.2.2"},
		{"not held", ce, State{Packages: with("containerd.io", Package{Version: "2.0.0-1"}), DockerActive: "active"}, "containerd.io is not held"},
		{"missing", ce, State{Packages: map[string]Package{}}, "docker-ce is not installed"},
		{"stopped", ce, State{Packages: ok, DockerActive: "inactive"}, "docker is inactive"},
		{"Debian's, unpinned", scripts.DockerEngineParams{Packages: []string{"docker.io"}},
			State{Packages: map[string]Package{"docker.io": {Version: "20.10.24+dfsg1-1+deb12u1+b6", Held: true}}, DockerActive: "active"}, ""},
		{"Debian's, pinned", scripts.DockerEngineParams{Version: "20.10.24", Packages: []string{"docker.io"}},
			State{Packages: map[string]Package{"docker.io": {Version: "20.10.24+dfsg1-1+deb12u1+b6", Held: true}}, DockerActive: "active"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := enginePending(tt.e, &tt.s); got != tt.reason {
				t.Errorf("got %q, want %q", got, tt.reason)
			}
		})
	}
}
