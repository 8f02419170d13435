package cluster

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/gpukit/gpukit/manifests"
	"github.com/gpukit/gpukit/test/aptrepo"
)

// Image is one image that kubeadm runs (the control plane's static pods,
// kube-proxy, CoreDNS, the pod sandbox), made from binaries of the builds
// (test/k8s/build.sh).
type Image struct {
	// Ref is name:tag as kubeadm names it under a custom imageRepository
	// (kube-apiserver:v1.37.2, etcd:3.7.0-0, coredns:v1.14.6, pause:3.10.2).
	Ref string
	// Upstream is its repository:tag on registry.k8s.io, as kubeadm names
	// it by default (coredns/coredns:v1.14.6).
	Upstream string
	// Files are the image's files: path in the image -> file on this machine.
	// Links are symlinks: path in the image -> target.
	Files, Links map[string]string
	// Entrypoint is the image's entrypoint (kubeadm's manifests give the
	// command of the static pods; the sandbox and CoreDNS rely on it).
	Entrypoint []string
	// VersionCmd prints Version on its first line when run in the image.
	VersionCmd []string
	Version    string
}

// Version is the Kubernetes version of a build directory (vX.Y.Z), from its
// name.
func Version(bin string) string {
	v, _, _ := strings.Cut(filepath.Base(bin), "-")
	return v
}

// kubeadmImage is a line of `kubeadm config images list`:
// registry.k8s.io/NAME:TAG, or registry.k8s.io/coredns/coredns:TAG (under a
// custom imageRepository kubeadm drops the inner coredns/).
var kubeadmImage = regexp.MustCompile(`^registry\.k8s\.io/((?:coredns/)?([a-z0-9-]+):([A-Za-z0-9_.-]+))$`)

// Images are the images kubeadm of the build in kube pulls (the list that
// `kubeadm config images list` printed at build time), each made from the
// binaries of kube and of the runtime build rt (CoreDNS).
func Images(t testing.TB, kube, rt string) []Image {
	t.Helper()
	list, err := os.ReadFile(filepath.Join(kube, "images"))
	if err != nil {
		t.Fatal(err)
	}
	etcd, err := os.ReadFile(filepath.Join(kube, "etcd-version"))
	if err != nil {
		t.Fatal(err)
	}
	corednsVersion := runtimeVersions(t, rt)["coredns"]
	if corednsVersion == "" {
		t.Fatalf("%s/versions names no coredns", rt)
	}
	v := Version(kube)
	// The bill's row for this minor is what gpukit bundle lists for a site.
	want, ok := manifests.Bill().KubeadmImageRefs(v)
	got := strings.Fields(string(list))
	slices.Sort(want)
	slices.Sort(got)
	if !ok || !slices.Equal(got, want) {
		t.Fatalf("kubeadm %s names the images %v; the bill of materials (kubeadmImages) says %v: correct manifests/bom.yaml", v, got, want)
	}
	var out []Image
	sc := bufio.NewScanner(strings.NewReader(string(list)))
	for sc.Scan() {
		m := kubeadmImage.FindStringSubmatch(strings.TrimSpace(sc.Text()))
		if m == nil {
			t.Fatalf("%s/images: %q is not an image kubeadm of this build names", kube, sc.Text())
		}
		name, tag := m[2], m[3]
		img := Image{Ref: name + ":" + tag, Upstream: m[1]}
		bin := func(b, at string) {
			img.Files = map[string]string{at: filepath.Join(kube, b)}
			img.VersionCmd = []string{at, "--version"}
		}
		switch name {
		case "kube-apiserver", "kube-controller-manager", "kube-scheduler":
			bin(name, "/usr/local/bin/"+name)
			img.Version = "Kubernetes " + v
		case "kube-proxy":
			bin(name, "/usr/local/bin/"+name)
			img.Version = "Kubernetes " + v
			addIptables(t, &img)
		case "etcd":
			ev := strings.TrimSpace(string(etcd))
			if tag != ev+"-0" {
				t.Fatalf("kubeadm %s wants etcd:%s but the module pins etcd %s: pin go.etcd.io/etcd/server/v3 to its version", v, tag, ev)
			}
			bin(name, "/usr/local/bin/etcd")
			img.Version = "etcd Version: " + ev
			// etcd's tools beside it, as registry.k8s.io/etcd has them
			// (gpukit's etcd backup and restore run them in the image)
			for _, tool := range []string{"etcdctl", "etcdutl"} {
				if _, err := os.Stat(filepath.Join(kube, tool)); err == nil {
					img.Files["/usr/local/bin/"+tool] = filepath.Join(kube, tool)
				}
			}
		case "coredns":
			// One CoreDNS build serves every version's tag (the Corefile kubeadm
			// writes is the same); the image says which it is.
			img.Files = map[string]string{"/coredns": filepath.Join(rt, "coredns")}
			img.Entrypoint = []string{"/coredns"}
			img.VersionCmd = []string{"/coredns", "-version"}
			img.Version = "CoreDNS-" + strings.TrimPrefix(corednsVersion, "v")
		case "pause":
			img.Files = map[string]string{"/pause": filepath.Join(Build(t, ""), "pause")}
			img.Entrypoint = []string{"/pause"}
			img.VersionCmd = []string{"/pause", "-v"}
			img.Version = "pause (gpukit test build)"
		default:
			t.Fatalf("kubeadm %s names image %s, which the lab cannot make: teach test/cluster/images.go", v, img.Ref)
		}
		out = append(out, img)
	}
	return out
}

// runtimeVersions reads the runtime build's versions file (name version per
// line: containerd, runc, cri-tools, coredns).
func runtimeVersions(t testing.TB, rt string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(rt, "versions"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for line := range strings.Lines(string(b)) {
		if n, v, ok := strings.Cut(strings.TrimSpace(line), " "); ok {
			out[n] = v
		}
	}
	return out
}

// addIptables puts this machine's iptables (xtables-nft-multi, its
// libraries, loader and extensions) into img: kube-proxy programs the
// node's rules with it.
func addIptables(t testing.TB, img *Image) {
	t.Helper()
	const multi = "/usr/sbin/xtables-nft-multi"
	if _, err := os.Stat(multi); err != nil {
		t.Fatalf("kube-proxy's image needs this machine's iptables (apt-get install iptables): %v", err)
	}
	img.Files[multi] = multi
	ext, _ := filepath.Glob("/usr/lib/*/xtables/*.so")
	// The extensions' own libraries too: libxt_statistic needs libm, and
	// kube-proxy's rules use it for every Service with several endpoints
	// (without it an HA cluster's kubernetes Service got no rules at all).
	for _, bin := range append([]string{multi}, ext...) {
		out, err := exec.Command("ldd", bin).Output()
		if err != nil {
			t.Fatalf("ldd %s: %v", bin, err)
		}
		for line := range strings.Lines(string(out)) {
			for _, f := range strings.Fields(line) {
				if strings.HasPrefix(f, "/") {
					real, err := filepath.EvalSymlinks(f)
					if err != nil {
						t.Fatal(err)
					}
					img.Files[f] = real
				}
			}
		}
	}
	for _, e := range ext {
		img.Files[e] = e
	}
	img.Links = map[string]string{}
	for _, n := range []string{"iptables", "iptables-save", "iptables-restore", "ip6tables", "ip6tables-save", "ip6tables-restore"} {
		img.Links["/usr/sbin/"+n] = "xtables-nft-multi"
	}
}

// PushImages makes each image (its files only; one layer) and pushes it
// as name(image) with push (lab.Lab.PushImage: the lab's registry, an
// air-gapped site's mirror), two at a time. It returns the digests by ref.
func PushImages(t testing.TB, images []Image, name func(Image) string, push func(t testing.TB, ref, dir string, entrypoint ...string) string) map[string]string {
	t.Helper()
	var (
		mu  sync.Mutex
		wg  sync.WaitGroup
		sem = make(chan struct{}, 2)
		out = map[string]string{}
	)
	for _, img := range images {
		dir := filepath.Join(t.TempDir(), "rootfs")
		for at, src := range img.Files {
			st, err := os.Stat(src)
			if err == nil {
				err = aptrepo.CopyFile(src, filepath.Join(dir, at), st.Mode().Perm())
			}
			if err != nil {
				t.Fatalf("image %s: %v", img.Ref, err)
			}
		}
		for at, target := range img.Links {
			p := filepath.Join(dir, at)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, p); err != nil {
				t.Fatal(err)
			}
		}
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			d := push(t, name(img), dir, img.Entrypoint...)
			mu.Lock()
			out[img.Ref] = d
			mu.Unlock()
		})
	}
	wg.Wait()
	return out
}
