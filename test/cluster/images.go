package cluster

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Image is one image of the Kubernetes control plane that kubeadm runs,
// made from a binary of the build (test/k8s/build.sh).
type Image struct {
	// Ref is name:tag as kubeadm names it (kube-apiserver:v1.36.3,
	// etcd:3.6.8-0, pause:3.10.1), under the registry kubeadm is told.
	Ref string
	// Binary is the file in the build directory, Path where the image has
	// it (kubeadm's manifests call the components by name, in PATH).
	Binary, Path string
	// Version is the first line `Path <VersionArg>` prints.
	VersionArg, Version string
}

// Version is the Kubernetes version of the built binaries (vX.Y.Z), from
// the build directory's name.
func Version(bin string) string {
	v, _, _ := strings.Cut(filepath.Base(bin), "-")
	return v
}

// Images are the control plane's images from the build in bin: the
// components, etcd and the pod sandbox (pause).
func Images(t testing.TB, bin string) []Image {
	t.Helper()
	etcd, err := os.ReadFile(filepath.Join(bin, "etcd-version"))
	if err != nil {
		t.Fatal(err)
	}
	v, ev := Version(bin), strings.TrimSpace(string(etcd))
	var out []Image
	for _, c := range []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler"} {
		out = append(out, Image{Ref: c + ":" + v, Binary: c, Path: "/usr/local/bin/" + c, VersionArg: "--version", Version: "Kubernetes " + v})
	}
	return append(out,
		Image{Ref: "etcd:" + ev + "-0", Binary: "etcd", Path: "/usr/local/bin/etcd", VersionArg: "--version", Version: "etcd Version: " + ev},
		Image{Ref: "pause:3.10.1", Binary: "pause", Path: "/pause", VersionArg: "-v", Version: "pause 3.10.1 (gpukit test build)"},
	)
}

// PushImages makes each image (the static binary alone, at its Path, as
// the entrypoint) and pushes it with push (lab.Lab.PushImage: the lab's
// registry, an air-gapped site's mirror). It returns the digests by ref.
func PushImages(t testing.TB, bin string, images []Image, push func(t testing.TB, ref, dir string, entrypoint ...string) string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, img := range images {
		dir := filepath.Join(t.TempDir(), "rootfs")
		dst := filepath.Join(dir, img.Path)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Link(filepath.Join(bin, img.Binary), dst); err != nil { // same filesystem: no 100 MB copy
			b, rerr := os.ReadFile(filepath.Join(bin, img.Binary))
			if rerr != nil {
				t.Fatal(rerr)
			}
			if err := os.WriteFile(dst, b, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		out[img.Ref] = push(t, img.Ref, dir, img.Path)
	}
	return out
}
