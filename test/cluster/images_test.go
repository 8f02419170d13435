package cluster

import (
	"strings"
	"testing"

	"github.com/gpukit/gpukit/test/lab"
)

// The control-plane binaries built from Go modules are served as images by
// the lab's registry and run by containerd in a Kubernetes lab host, the
// way kubeadm's static pods will get them on an air-gapped site.
func TestControlPlaneImagesFromTheLabRegistry(t *testing.T) {
	Require(t)
	lab.Require(t)
	t.Parallel()
	bin := Binaries(t)
	l := lab.Start(t, lab.Options{Hosts: 1, Kube: true})
	reg := l.Registry(t)
	digests := PushControlPlaneImages(t, bin, l.PushImage)
	if len(digests) != len(ControlPlaneComponents) {
		t.Fatalf("pushed %v", digests)
	}
	l.UseDebianMirror(t, "lab-1")
	l.SSH(t, "lab-1", "apt-get -qq update && DEBIAN_FRONTEND=noninteractive apt-get -qq install -y --no-install-recommends containerd >/dev/null 2>&1; systemctl start containerd")
	for ref, digest := range digests {
		img := reg + "/" + ref
		name := strings.SplitN(ref, ":", 2)[0]
		got := l.SSH(t, "lab-1", "ctr -n k8s.io images pull --plain-http "+img+" >/dev/null && "+
			"ctr -n k8s.io images ls name=="+img+" -q && ctr -n k8s.io images ls name=="+img+" | awk 'NR == 2 {print $3}' && "+
			"ctr -n k8s.io run --rm "+img+" v-"+name+" "+name+" --version")
		want := img + "\n" + digest + "\nKubernetes " + Version(bin)
		if got != want {
			t.Errorf("%s in lab-1:\n%s\nwant\n%s", ref, got, want)
		}
	}
}
