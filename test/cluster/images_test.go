package cluster

import (
	"strings"
	"testing"

	"github.com/gpukit/gpukit/test/lab"
)

// The images kubeadm runs (the components, kube-proxy with iptables, etcd,
// CoreDNS and the pod sandbox), built from Go modules, are served by the
// lab's registry and run by containerd in a Kubernetes lab host, the way
// kubeadm's pods get them on an air-gapped site.
func TestKubeadmImagesFromTheLabRegistry(t *testing.T) {
	Require(t)
	lab.Require(t)
	t.Parallel()
	kube, rt := Binaries(t), Build(t, "runtime")
	l := lab.Start(t, lab.Options{Hosts: 1, Kube: true})
	reg := l.Registry(t)
	images := Images(t, kube, rt)
	var names []string
	for _, img := range images {
		names = append(names, strings.SplitN(img.Ref, ":", 2)[0])
	}
	if got := strings.Join(names, " "); got != "kube-apiserver kube-controller-manager kube-scheduler kube-proxy coredns pause etcd" {
		t.Errorf("kubeadm %s names %s", Version(kube), got)
	}
	digests := PushImages(t, images, func(img Image) string { return img.Ref }, l.PushImage)
	l.UseDebianMirror(t, "lab-1")
	l.SSH(t, "lab-1", "apt-get -qq update && DEBIAN_FRONTEND=noninteractive apt-get -qq install -y --no-install-recommends containerd >/dev/null 2>&1; systemctl start containerd")
	for i, img := range images {
		ref := reg + "/" + img.Ref
		got := l.SSH(t, "lab-1", "ctr -n k8s.io images pull --plain-http "+ref+" >/dev/null && "+
			"ctr -n k8s.io images ls name=="+ref+" | awk 'NR == 2 {print $3}' && "+
			"ctr -n k8s.io run --rm "+ref+" v"+string(rune('a'+i))+" "+strings.Join(img.VersionCmd, " ")+" 2>&1 | head -n 1")
		if want := digests[img.Ref] + "\n" + img.Version; got != want {
			t.Errorf("%s in lab-1:\n%s\nwant\n%s", img.Ref, got, want)
		}
	}
	// kube-proxy programs rules with the image's own iptables
	proxy := images[3]
	if out := l.SSH(t, "lab-1", "ctr -n k8s.io run --rm "+reg+"/"+proxy.Ref+" ipt iptables --version"); !strings.Contains(out, "nf_tables") {
		t.Errorf("iptables in %s: %q", proxy.Ref, out)
	}
	// and its extensions load: statistic (every Service with several
	// endpoints) needs libm
	if out := l.SSH(t, "lab-1", "ctr -n k8s.io run --rm "+reg+"/"+proxy.Ref+" ipt2 iptables -m statistic --help 2>&1 | grep -c 'statistic match options'"); out != "1" {
		t.Errorf("iptables -m statistic in %s: %q", proxy.Ref, out)
	}
}
