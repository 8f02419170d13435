package cluster

import (
	"encoding/base64"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpukit/gpukit/manifests"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/osfamily"
	"github.com/gpukit/gpukit/pkg/scripts"
	"github.com/gpukit/gpukit/test/lab"
	"mvdan.cc/sh/v3/syntax"
)

// gpukit's kube-packages script, as rendered for a Debian 12 host, installs
// kubeadm, kubelet and kubectl from a mirror of pkgs.k8s.io (the lab's
// signed stand-in) at the inventory's version, cri-tools at its newest,
// holds them and enables the kubelet; run again, it installs nothing.
func TestKubePackagesScriptInTheLab(t *testing.T) {
	Require(t)
	lab.Require(t)
	t.Parallel()
	kube, rt := Binaries(t), Build(t, "runtime")
	l := lab.Start(t, lab.Options{Hosts: 1, Kube: true})
	pkgs := PublishPackages(t, l.LabDir(), l.Bridge, kube, rt)
	l.UseDebianMirror(t, "lab-1")
	fam, err := osfamily.Detect("debian", "12")
	if err != nil {
		t.Fatal(err)
	}
	v := strings.TrimPrefix(Version(kube), "v")
	mirrors := inventory.Mirrors{Kubernetes: pkgs.URL, SigningKeys: inventory.MirrorKeys{Kubernetes: []string{pkgs.KeyFingerprint}}}
	cmd, err := scripts.KubePackages(scripts.KubePackagesParams{Family: fam, RepoURL: pkgs.Kubernetes, Version: v,
		Packages: []string{"kubeadm", "kubelet", "kubectl"}, Extra: []string{"cri-tools"},
		Key: mirrors.SigningKey(manifests.RepoKubernetes, "apt")})
	if err != nil {
		t.Fatal(err)
	}
	out := runScript(t, l, "lab-1", "gpukit-script.sh", cmd.Script, nil)
	if want := "gpukit: kubeadm v" + v + ", kubelet v" + v; !strings.HasSuffix(out, want) {
		t.Errorf("the script ended with:\n%s\nwant %q", tail(out, 5), want)
	}
	state := "dpkg-query -W -f='${Package} ${Version} ${db:Status-Abbrev}\\n' kubeadm kubelet kubectl cri-tools; apt-mark showhold | tr '\\n' ' '; systemctl is-enabled kubelet"
	// dpkg-query lists in name order
	want := "cri-tools " + pkgs.Versions["cri-tools"] + " hi \nkubeadm " + pkgs.Versions["kubeadm"] + " hi \nkubectl " + pkgs.Versions["kubectl"] + " hi \n" +
		"kubelet " + pkgs.Versions["kubelet"] + " hi \ncri-tools kubeadm kubectl kubelet enabled"
	if got := l.SSH(t, "lab-1", state); got != want {
		t.Errorf("after the script:\n%s\nwant\n%s", got, want)
	}
	before := l.SSH(t, "lab-1", "wc -l </var/log/dpkg.log")
	runScript(t, l, "lab-1", "gpukit-script.sh", cmd.Script, nil)
	if after := l.SSH(t, "lab-1", "wc -l </var/log/dpkg.log"); after != before {
		t.Errorf("the second run changed packages: dpkg.log grew from %s to %s lines", before, after)
	}
}

// runScript writes script to /root/NAME on host name and runs it there as
// root with env (bash, stdin not the script's, as the engine runs gpukit's),
// in one ssh round trip; it returns the output (stderr too). The file stays
// for a look at a kept lab.
func runScript(t *testing.T, l *lab.Lab, host, name, script string, env map[string]string) string {
	t.Helper()
	var assign strings.Builder
	for _, k := range slices.Sorted(maps.Keys(env)) {
		v, err := syntax.Quote(env[k], syntax.LangBash)
		if err != nil {
			t.Fatalf("%s=%q: %v", k, env[k], err)
		}
		assign.WriteString(k + "=" + v + " ")
	}
	f := "/root/" + name
	// longer than the script's own bounds on its steps, so a hung step reports itself
	return l.SSHWithin(t, host, "echo "+base64.StdEncoding.EncodeToString([]byte(script))+" | base64 -d >"+f+" && "+
		assign.String()+"bash "+f+" </dev/null 2>&1", 12*time.Minute)
}
