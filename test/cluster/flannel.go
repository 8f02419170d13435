package cluster

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/gpukit/gpukit/pkg/bootstrap/kubeadm"
	"github.com/gpukit/gpukit/pkg/charts"
)

// FlannelImages are the images flannel's chart (the version gpukit installs,
// from the chart archives in chartsDir) runs, at the repositories and tags
// its values name: kube-flannel (flanneld, install-conf and this machine's
// iptables, for --ip-masq) and flannel-cni-plugin (the CNI plugin and the cp
// its init container copies it with), made from the flannel build
// (test/k8s/build.sh flannel). Ref is the full public name
// (ghcr.io/flannel-io/flannel:v0.28.9): the lab registry keeps it under
// that name below its mirror path.
func FlannelImages(t testing.TB, chartsDir string) []Image {
	t.Helper()
	ch, err := charts.Source(chartsDir).Load(context.Background(), kubeadm.FlannelChart)
	if err != nil {
		t.Fatal(err)
	}
	image := func(path ...string) string {
		v := any(ch.Values)
		for _, p := range path {
			m, ok := v.(map[string]any)
			if !ok {
				t.Fatalf("chart %s has no values.%v", kubeadm.FlannelChart, path)
			}
			v = m[p]
		}
		im, _ := v.(map[string]any)
		repo, _ := im["repository"].(string)
		tag, _ := im["tag"].(string)
		if repo == "" || tag == "" {
			t.Fatalf("chart %s: values.%v is not an image with a repository and a tag", kubeadm.FlannelChart, path)
		}
		return repo + ":" + tag
	}
	fl := Build(t, "flannel")
	version := runtimeVersions(t, fl)["flannel"]
	if version == "" {
		t.Fatalf("%s/versions names no flannel", fl)
	}
	flannel := Image{
		Ref:        image("flannel", "image"),
		Files:      map[string]string{"/opt/bin/flanneld": filepath.Join(fl, "flanneld"), "/opt/bin/install-conf": filepath.Join(fl, "install-conf")},
		Entrypoint: []string{"/opt/bin/flanneld"},
		VersionCmd: []string{"/opt/bin/flanneld", "--version"},
		Version:    version,
	}
	addIptables(t, &flannel)
	cni := Image{
		Ref:        image("flannel", "flannel_cni", "image"),
		Files:      map[string]string{"/flannel": filepath.Join(fl, "flannel"), "/bin/cp": filepath.Join(fl, "cp")},
		VersionCmd: []string{"/bin/cp"},
		Version:    "usage: cp [-f] SRC DST",
	}
	flannel.Upstream, cni.Upstream = flannel.Ref, cni.Ref
	return []Image{flannel, cni}
}
