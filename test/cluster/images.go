package cluster

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// ControlPlaneComponents are the binaries kubeadm runs as static pods,
// built by test/k8s/build.sh.
var ControlPlaneComponents = []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler"}

// Version is the Kubernetes version of the built binaries (vX.Y.Z), from
// the build directory's name.
func Version(bin string) string {
	v, _, _ := strings.Cut(filepath.Base(bin), "-")
	return v
}

// PushControlPlaneImages makes an image of each control-plane binary
// (static, so the image is the binary alone, in /usr/local/bin, as
// kubeadm's manifests call it by name) tagged as kubeadm names them
// (kube-apiserver:v1.36.3), and pushes it with push (lab.Lab.PushImage:
// the lab's registry, an air-gapped site's mirror). It returns the digests
// by image.
func PushControlPlaneImages(t testing.TB, bin string, push func(t testing.TB, ref, dir string, entrypoint ...string) string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, c := range ControlPlaneComponents {
		dir := filepath.Join(t.TempDir(), c)
		if err := os.MkdirAll(filepath.Join(dir, "usr/local/bin"), 0o755); err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(dir, "usr/local/bin", c)
		if err := os.Link(filepath.Join(bin, c), dst); err != nil { // same filesystem: no copy of 100 MB
			b, rerr := os.ReadFile(filepath.Join(bin, c))
			if rerr != nil {
				t.Fatal(rerr)
			}
			if err := os.WriteFile(dst, b, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		ref := c + ":" + Version(bin)
		out[ref] = push(t, ref, dir, "/usr/local/bin/"+c)
	}
	return out
}
