package cluster

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/gpukit/gpukit/pkg/osfamily"
	"github.com/gpukit/gpukit/pkg/scripts"
	"github.com/gpukit/gpukit/pkg/ssh"
	"github.com/gpukit/gpukit/test/lab"
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
	cmd, err := scripts.KubePackages(scripts.KubePackagesParams{Family: fam, RepoURL: pkgs.Kubernetes, Version: v,
		Packages: []string{"kubeadm", "kubelet", "kubectl"}, Extra: []string{"cri-tools"}})
	if err != nil {
		t.Fatal(err)
	}
	out := runScript(t, l, "lab-1", cmd)
	if want := "gpukit: kubeadm v" + v + ", kubelet v" + v; !strings.HasSuffix(out, want) {
		t.Errorf("the script ended with:\n%s\nwant %q", tail(out, 5), want)
	}
	state := "dpkg-query -W -f='${Package} ${Version} ${db:Status-Abbrev}\\n' kubeadm kubelet kubectl cri-tools; apt-mark showhold | tr '\\n' ' '; systemctl is-enabled kubelet"
	want := "kubeadm " + pkgs.Versions["kubeadm"] + " hi \nkubelet " + pkgs.Versions["kubelet"] + " hi \nkubectl " + pkgs.Versions["kubectl"] + " hi \n" +
		"cri-tools " + pkgs.Versions["cri-tools"] + " hi \ncri-tools kubeadm kubectl kubelet enabled"
	if got := l.SSH(t, "lab-1", state); got != want {
		t.Errorf("after the script:\n%s\nwant\n%s", got, want)
	}
	before := l.SSH(t, "lab-1", "wc -l </var/log/dpkg.log")
	runScript(t, l, "lab-1", cmd)
	if after := l.SSH(t, "lab-1", "wc -l </var/log/dpkg.log"); after != before {
		t.Errorf("the second run changed packages: dpkg.log grew from %s to %s lines", before, after)
	}
}

// runScript runs a rendered gpukit script on host name as root, the way the
// engine does (bash, stdin not the script's), and returns its output.
func runScript(t *testing.T, l *lab.Lab, name string, cmd ssh.Command) string {
	t.Helper()
	l.SSH(t, name, "echo "+base64.StdEncoding.EncodeToString([]byte(cmd.Script))+" | base64 -d >/root/gpukit-script.sh")
	return l.SSH(t, name, "bash /root/gpukit-script.sh </dev/null 2>&1")
}
