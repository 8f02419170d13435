package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpukit/gpukit/test/aptrepo"
)

// The lab's Kubernetes package repositories: stand-ins built from the
// binaries of test/k8s, named, versioned and laid out like the upstream
// repositories gpukit uses on real hosts, so the lab exercises the same
// install path (the sites' mirrors: spec.mirrors.kubernetes and
// spec.mirrors.docker):
//
//	URL/core:/stable:/v1.37/deb/   pkgs.k8s.io: kubeadm, kubelet, kubectl, cri-tools (flat, signed, Release.key)
//	URL/linux/debian/              download.docker.com: containerd.io (containerd 2 with runc, as Docker ships it)
//
// They are signed with a test key ($LAB/repo/kubernetes-key).

// keyUID names the test key: nobody may mistake it for a real one.
const keyUID = "gpukit lab Kubernetes test repository key (NOT pkgs.k8s.io or Docker; test only) <lab@gpukit.invalid>"

const maintainer = "gpukit lab <lab@gpukit.invalid>"

// debRevision is the revision pkgs.k8s.io gives its packages (1.37.2-1.1).
const debRevision = "-1.1"

// Packages is a published Kubernetes package tree for lab hosts.
type Packages struct {
	// URL is the tree's base (ending in "/"): spec.mirrors.kubernetes and
	// spec.mirrors.docker of a lab inventory.
	URL string
	// Kubernetes is the pkgs.k8s.io repository of the version's minor
	// (URL + core:/stable:/v1.37/deb/), with its Release.key.
	Kubernetes string
	// Docker is Docker's Debian repository (URL + linux/debian/), with its
	// key at Docker + "gpg".
	Docker string
	// Versions are the package versions by name (kubeadm 1.37.2-1.1, ...).
	Versions map[string]string
	// Dir is URL's directory on this machine.
	Dir string
	// KeyFingerprint is the test key's: the inventory's
	// spec.mirrors.signingKeys for both mirrors, as a site's re-signed mirror.
	KeyFingerprint string
}

// Minor is "v1.37" of "v1.37.2".
func Minor(version string) string {
	if i := strings.LastIndexByte(version, '.'); i > 0 {
		return version[:i]
	}
	return version
}

// kubernetesDebs are the pkgs.k8s.io packages of the build in kube (crictl
// from the runtime build rt).
func kubernetesDebs(kube, rt string, rtVersions map[string]string) []aptrepo.Deb {
	v := strings.TrimPrefix(Version(kube), "v") + debRevision
	cri := strings.TrimPrefix(rtVersions["cri-tools"], "v") + debRevision
	deb := func(name, version, summary, from, depends string, files ...aptrepo.File) aptrepo.Deb {
		return aptrepo.Deb{Name: name, Version: version, Arch: "amd64", Maintainer: maintainer, Section: "admin",
			Homepage: "https://kubernetes.io", Depends: depends, Files: files,
			Description: summary + " (gpukit lab build)\nBuilt from " + from + " by gpukit's test/k8s for the lab."}
	}
	bin := func(name string) aptrepo.File {
		return aptrepo.File{Path: "/usr/bin/" + name, Mode: 0o755, Src: filepath.Join(kube, name)}
	}
	unit := func(path, text string) aptrepo.File { return aptrepo.File{Path: path, Mode: 0o644, Data: []byte(text)} }
	from := "k8s.io/kubernetes " + Version(kube)
	return []aptrepo.Deb{
		// pkgs.k8s.io's dependencies, less kubernetes-cni (the lab's CNI
		// plugins are Debian's containernetworking-plugins)
		deb("kubelet", v, "Node agent for Kubernetes clusters", from,
			"iptables (>= 1.4.21), iproute2, socat, util-linux, mount, ethtool, conntrack",
			bin("kubelet"), unit("/usr/lib/systemd/system/kubelet.service", kubeletService)),
		deb("kubeadm", v, "Command-line utility for administering a Kubernetes cluster", from,
			"kubelet (>= 1.30.0), kubectl (>= 1.30.0), cri-tools (>= 1.30.0)",
			bin("kubeadm"), unit("/usr/lib/systemd/system/kubelet.service.d/10-kubeadm.conf", kubeadmDropIn)),
		deb("kubectl", v, "Command-line utility for interacting with a Kubernetes cluster", from, "", bin("kubectl")),
		deb("cri-tools", cri, "Command-line utility for interacting with a container runtime", "sigs.k8s.io/cri-tools", "",
			aptrepo.File{Path: "/usr/bin/crictl", Mode: 0o755, Src: filepath.Join(rt, "crictl")}),
	}
}

// kubernetesRepo is the pkgs.k8s.io repository of the build in kube's minor.
func kubernetesRepo(kube, rt string, rtVersions map[string]string) aptrepo.Repo {
	return aptrepo.Repo{Debs: kubernetesDebs(kube, rt, rtVersions), Release: aptrepo.Release{
		Origin: "gpukit-lab:kubernetes", Label: "gpukit lab stand-in of pkgs.k8s.io " + Minor(Version(kube)),
		Description: "Kubernetes packages built from Go modules by gpukit's test/k8s (test only)", Archs: []string{"amd64"}}}
}

// dockerDebs are Docker's containerd.io of the runtime build: containerd 2
// and runc in one package, replacing Debian's containerd and runc, with the
// config.toml Docker ships (the CRI plugin disabled: Kubernetes hosts must
// rewrite it, as on real hosts).
func dockerDebs(t testing.TB, rt string, rtVersions map[string]string) []aptrepo.Deb {
	t.Helper()
	v := strings.TrimPrefix(rtVersions["containerd"], "v") + "-1~debian.12~bookworm"
	unit, err := os.ReadFile(filepath.Join(rt, "containerd.service"))
	if err != nil {
		t.Fatal(err)
	}
	// upstream's unit runs /usr/local/bin/containerd (a tarball install);
	// packages put it in /usr/bin
	unit = []byte(strings.ReplaceAll(string(unit), "/usr/local/bin/containerd", "/usr/bin/containerd"))
	f := func(name string) aptrepo.File {
		return aptrepo.File{Path: "/usr/bin/" + name, Mode: 0o755, Src: filepath.Join(rt, name)}
	}
	return []aptrepo.Deb{{
		Name: "containerd.io", Version: v, Arch: "amd64", Maintainer: maintainer, Section: "devel",
		Homepage: "https://containerd.io",
		Depends:  "libc6 (>= 2.34), libseccomp2 (>= 2.5.0)",
		Provides: "containerd, runc", Conflicts: "containerd, runc", Replaces: "containerd, runc",
		Description: "An open and reliable container runtime (gpukit lab build)\nBuilt from github.com/containerd/containerd/v2 and github.com/opencontainers/runc\nby gpukit's test/k8s for the lab, packaged as Docker's containerd.io.",
		Files: []aptrepo.File{f("containerd"), f("containerd-shim-runc-v2"), f("ctr"), f("runc"),
			{Path: "/usr/lib/systemd/system/containerd.service", Mode: 0o644, Data: unit},
			{Path: "/etc/containerd/config.toml", Mode: 0o644, Data: []byte(dockerContainerdConfig)}},
		Scripts: map[string]string{"postinst": "#!/bin/sh\nset -e\nif [ \"$1\" = configure ] && [ -d /run/systemd/system ]; then\n\tsystemctl daemon-reload\n\tsystemctl enable containerd.service >/dev/null 2>&1\n\tsystemctl restart containerd.service\nfi\n"},
	}}
}

// PublishPackages publishes the Kubernetes and Docker stand-in repositories
// of the builds kube and rt into the lab repository's web root (labDir/repo/
// www/kubernetes/<content hash>/, reused when identical) and returns them with
// URLs on the lab bridge. The builds in more get their minors' repositories
// in the same tree (another release to upgrade to).
func PublishPackages(t testing.TB, labDir, bridge, kube, rt string, more ...string) Packages {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	key, err := aptrepo.LoadKey(ctx, filepath.Join(labDir, "repo", "kubernetes-key"), keyUID)
	if err != nil {
		t.Fatal(err)
	}
	rtVersions := runtimeVersions(t, rt)
	k8sDir := "core:/stable:/" + Minor(Version(kube)) + "/deb/"
	const dockerDir = "linux/debian/"
	tree := aptrepo.Tree{
		Repos: map[string]aptrepo.Repo{
			k8sDir: kubernetesRepo(kube, rt, rtVersions),
			dockerDir: {Debs: dockerDebs(t, rt, rtVersions), Release: aptrepo.Release{
				Origin: "Docker", Label: "Docker CE (gpukit lab stand-in)", Suite: "bookworm", Codename: "bookworm",
				Description: "containerd.io built from Go modules by gpukit's test/k8s (test only)", Archs: []string{"amd64"}},
				Dist: &aptrepo.Dist{Codename: "bookworm", Component: "stable"}},
		},
		Files: map[string][]byte{
			k8sDir + "Release.key": key.Armored,
			dockerDir + "gpg":      key.Armored,
			"README": []byte("gpukit lab stand-ins of pkgs.k8s.io and download.docker.com (test/cluster): packages built\n" +
				"from Go modules by test/k8s, signed with a TEST key (" + key.Fingerprint + "). Test only.\n"),
		},
		Key: key,
	}
	for _, k := range more {
		dir := "core:/stable:/" + Minor(Version(k)) + "/deb/"
		tree.Repos[dir] = kubernetesRepo(k, rt, rtVersions)
		tree.Files[dir+"Release.key"] = key.Armored
	}
	began := time.Now()
	dir, hash, reused, err := tree.Publish(ctx, filepath.Join(labDir, "repo", "www", "kubernetes"))
	if err != nil {
		t.Fatal(err)
	}
	how := "built"
	if reused {
		how = "reused"
	}
	base := fmt.Sprintf("http://%s:8080/kubernetes/%s/", bridge, hash)
	t.Logf("Kubernetes %s lab packages %s in %s: %s", Version(kube), how, time.Since(began).Round(time.Millisecond), base)
	p := Packages{URL: base, Kubernetes: base + k8sDir, Docker: base + dockerDir, Dir: dir, Versions: map[string]string{}, KeyFingerprint: key.Fingerprint}
	for _, dir := range []string{k8sDir, dockerDir} { // the first release's
		for _, d := range tree.Repos[dir].Debs {
			p.Versions[d.Name] = d.Version
		}
	}
	return p
}

// kubeletService and kubeadmDropIn are the units pkgs.k8s.io's kubelet and
// kubeadm packages install.
const kubeletService = `[Unit]
Description=kubelet: The Kubernetes Node Agent
Documentation=https://kubernetes.io/docs/
Wants=network-online.target
After=network-online.target

[Service]
ExecStart=/usr/bin/kubelet
Restart=always
StartLimitInterval=0
RestartSec=10

[Install]
WantedBy=multi-user.target
`

const kubeadmDropIn = `# Note: This dropin only works with kubeadm and kubelet v1.11+
[Service]
Environment="KUBELET_KUBECONFIG_ARGS=--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf --kubeconfig=/etc/kubernetes/kubelet.conf"
Environment="KUBELET_CONFIG_ARGS=--config=/var/lib/kubelet/config.yaml"
# This is a file that "kubeadm init" and "kubeadm join" generates at runtime, populating the KUBELET_KUBEADM_ARGS variable dynamically
EnvironmentFile=-/var/lib/kubelet/kubeadm-flags.env
# This is a file that the user can use for overrides of the kubelet args as a last resort. Preferably, the user should use
# the .NodeRegistration.KubeletExtraArgs object in the configuration files instead. KUBELET_EXTRA_ARGS should be sourced from this file.
EnvironmentFile=-/etc/default/kubelet
ExecStart=
ExecStart=/usr/bin/kubelet $KUBELET_KUBECONFIG_ARGS $KUBELET_CONFIG_ARGS $KUBELET_KUBEADM_ARGS $KUBELET_EXTRA_ARGS
`

// dockerContainerdConfig is the /etc/containerd/config.toml of Docker's
// containerd.io: the CRI plugin off, since dockerd does not need it.
const dockerContainerdConfig = `#   Copyright 2018-2022 Docker Inc.

#   Licensed under the Apache License, Version 2.0 (the "License");
#   you may not use this file except in compliance with the License.
#   You may obtain a copy of the License at

#       http://www.apache.org/licenses/LICENSE-2.0

#   Unless required by applicable law or agreed to in writing, software
#   distributed under the License is distributed on an "AS IS" BASIS,
#   WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
#   See the License for the specific language governing permissions and
#   limitations under the License.

disabled_plugins = ["cri"]

#root = "/var/lib/containerd"
#state = "/run/containerd"
#subreaper = true
#oom_score = 0

#[grpc]
#  address = "/run/containerd/containerd.sock"
#  uid = 0
#  gid = 0

#[debug]
#  address = "/run/containerd/debug.sock"
#  uid = 0
#  gid = 0
#  level = "info"
`
