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
	// dpkg-query lists in name order
	want := "cri-tools " + pkgs.Versions["cri-tools"] + " hi \nkubeadm " + pkgs.Versions["kubeadm"] + " hi \nkubectl " + pkgs.Versions["kubectl"] + " hi \n" +
		"kubelet " + pkgs.Versions["kubelet"] + " hi \ncri-tools kubeadm kubectl kubelet enabled"
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

// gpukit's kube-prepare script on a Kubernetes lab host: fstab's swap entry
// commented out (the original kept), the modules' boot file and the sysctls
// written and applied; run again, it changes nothing and says nothing.
func TestKubePrepareScriptInTheLab(t *testing.T) {
	Require(t)
	lab.Require(t)
	t.Parallel()
	l := lab.Start(t, lab.Options{Hosts: 1, Kube: true})
	// a swap partition the host does not use right now (swapon in a lab host
	// would swap the whole machine)
	l.SSH(t, "lab-1", "echo 'UUID=0f0f0f0f-0000-4000-8000-000000000000 none swap sw 0 0' >>/etc/fstab; sysctl -q -w net.ipv4.ip_forward=0")
	cmd, err := scripts.KubePrepare()
	if err != nil {
		t.Fatal(err)
	}
	out := runScript(t, l, "lab-1", cmd)
	for _, want := range []string{"gpukit: swap entries of /etc/fstab commented out", "gpukit: overlay and br_netfilter load at boot",
		"gpukit: /etc/sysctl.d/99-gpukit-kubernetes.conf written", "gpukit: net.ipv4.ip_forward=1"} {
		if !strings.Contains(out, want) {
			t.Errorf("first run lacks %q:\n%s", want, out)
		}
	}
	got := l.SSH(t, "lab-1", "grep -c '^# gpukit (kubelet needs swap off): UUID=0f0f' /etc/fstab; grep -c '^UUID=0f0f' /etc/fstab.gpukit; "+
		"cat /etc/modules-load.d/gpukit-kubernetes.conf; sysctl -n net.ipv4.ip_forward net.bridge.bridge-nf-call-iptables")
	if want := "1\n1\noverlay\nbr_netfilter\n1\n1"; got != want {
		t.Errorf("after the script:\n%s\nwant\n%s", got, want)
	}
	if again := runScript(t, l, "lab-1", cmd); again != "" {
		t.Errorf("the second run changed something:\n%s", again)
	}
}
