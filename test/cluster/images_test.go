package cluster

import (
	"testing"

	"github.com/gpukit/gpukit/test/lab"
)

// The control plane's images, built from Go modules (the components, etcd
// and pause), are served by the lab's registry and run by containerd in a
// Kubernetes lab host, the way kubeadm's static pods will get them on an
// air-gapped site.
func TestControlPlaneImagesFromTheLabRegistry(t *testing.T) {
	Require(t)
	lab.Require(t)
	t.Parallel()
	bin := Binaries(t)
	l := lab.Start(t, lab.Options{Hosts: 1, Kube: true})
	reg := l.Registry(t)
	images := Images(t, bin)
	digests := PushImages(t, bin, images, l.PushImage)
	l.UseDebianMirror(t, "lab-1")
	l.SSH(t, "lab-1", "apt-get -qq update && DEBIAN_FRONTEND=noninteractive apt-get -qq install -y --no-install-recommends containerd >/dev/null 2>&1; systemctl start containerd")
	for i, img := range images {
		ref := reg + "/" + img.Ref
		got := l.SSH(t, "lab-1", "ctr -n k8s.io images pull --plain-http "+ref+" >/dev/null && "+
			"ctr -n k8s.io images ls name=="+ref+" | awk 'NR == 2 {print $3}' && "+
			"ctr -n k8s.io run --rm "+ref+" v"+string(rune('a'+i))+" "+img.Path+" "+img.VersionArg+" | head -n 1")
		if want := digests[img.Ref] + "\n" + img.Version; got != want {
			t.Errorf("%s in lab-1:\n%s\nwant\n%s", img.Ref, got, want)
		}
	}
}
