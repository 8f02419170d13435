package bundle

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/gpukit/gpukit/pkg/bundlefs"
	"github.com/gpukit/gpukit/pkg/debrepo"
	"github.com/gpukit/gpukit/test/fixtures"
)

// fakeSite is what a bundle is made from in TestCreate: a stand-in NVIDIA
// repository and a stand-in distribution archive (dists layout), each
// signed by its own key, over HTTP; and a registry.
type fakeSite struct {
	nvidia, distro *httptest.Server
	nvidiaKey      string // fingerprint
	distroKeyring  string // file
	distroKey      string
	registry       string // host:port
}

// buildDeb makes a tiny .deb with dpkg-deb.
func buildDeb(t *testing.T, dir, pkg, version, depends string) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), pkg)
	os.MkdirAll(filepath.Join(root, "DEBIAN"), 0o755)
	control := fmt.Sprintf("Package: %s\nVersion: %s\nArchitecture: amd64\nMaintainer: gpukit <t@example.invalid>\nDescription: a test package\n", pkg, version)
	if depends != "" {
		control += "Depends: " + depends + "\n"
	}
	if err := os.WriteFile(filepath.Join(root, "DEBIAN", "control"), []byte(control), 0o644); err != nil {
		t.Fatal(err)
	}
	deb := filepath.Join(dir, pkg+"_"+version+"_amd64.deb")
	if out, err := exec.Command("dpkg-deb", "--root-owner-group", "--build", root, deb).CombinedOutput(); err != nil {
		t.Fatalf("dpkg-deb: %v\n%s", err, out)
	}
	return deb
}

// repoOf writes debs as a repository signed by a new key: flat, or the
// dists layout of Debian 12's suites, component main. It returns the key.
func repoOf(t *testing.T, dir string, dists bool, debs ...string) string {
	t.Helper()
	var index bytes.Buffer
	for _, deb := range debs {
		control, err := exec.Command("dpkg-deb", "-f", deb).Output()
		if err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(deb)
		fmt.Fprintf(&index, "%sFilename: %s\nSize: %d\nSHA256: %x\n\n", control, filepath.Base(deb), len(b), sha256.Sum256(b))
	}
	pkgs, err := debrepo.ParsePackages("http://x", index.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	key, err := debrepo.NewSigningKey("test archive")
	if err != nil {
		t.Fatal(err)
	}
	at := dir
	if dists {
		at = debrepo.PoolDir(dir, "main")
	}
	os.MkdirAll(at, 0o755)
	for _, deb := range debs {
		if err := os.Rename(deb, filepath.Join(at, filepath.Base(deb))); err != nil {
			t.Fatal(err)
		}
	}
	if dists {
		// the suites of Debian's archive and of its security archive, as
		// the bill names them: one mirror URL serves all three here
		for _, suite := range []string{"bookworm", "bookworm-updates", "bookworm-security"} {
			if err = debrepo.WriteDists(dir, suite, "main", "amd64", pkgs, key, "test"); err != nil {
				break
			}
		}
	} else {
		err = debrepo.WriteFlat(dir, pkgs, key, "test")
	}
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := debrepo.ArmoredPublicKey(key)
	os.WriteFile(filepath.Join(dir, "key.asc"), pub, 0o644)
	return debrepo.Fingerprint(key)
}

func newFakeSite(t *testing.T) *fakeSite {
	t.Helper()
	if _, err := exec.LookPath("dpkg-deb"); err != nil {
		t.Skip("no dpkg-deb: not a Debian host")
	}
	s := &fakeSite{}
	tmp := t.TempDir()
	nv := filepath.Join(tmp, "nvidia", "cuda", "repos", "debian12", "x86_64")
	os.MkdirAll(nv, 0o755)
	s.nvidiaKey = repoOf(t, nv, false,
		buildDeb(t, tmp, "nvidia-open", "580.95.05-1", "gpukit-test-lib (>= 2)"),
		buildDeb(t, tmp, "nvidia-open", "570.1.1-1", ""))
	distro := filepath.Join(tmp, "debian")
	s.distroKey = repoOf(t, distro, true,
		buildDeb(t, tmp, "gpukit-test-lib", "2.1-1", ""),
		buildDeb(t, tmp, "dkms", "3.0.10-8", "gpukit-test-lib"),
		buildDeb(t, tmp, "unrelated", "1-1", ""))
	s.distroKeyring = filepath.Join(distro, "key.asc")
	s.nvidia = httptest.NewServer(http.FileServer(http.Dir(filepath.Join(tmp, "nvidia"))))
	s.distro = httptest.NewServer(http.FileServer(http.Dir(distro)))
	reg := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(func() { s.nvidia.Close(); s.distro.Close(); reg.Close() })
	u, _ := url.Parse(reg.URL)
	s.registry = u.Host
	return s
}

// push puts a random image (or a two-platform index) at ref.
func push(t *testing.T, ref string, index bool) string {
	t.Helper()
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if !index {
		img, _ := random.Image(512, 2)
		if err := remote.Write(r, img); err != nil {
			t.Fatal(err)
		}
		d, _ := img.Digest()
		return d.String()
	}
	var adds []mutate.IndexAddendum
	for _, arch := range []string{"amd64", "arm64"} {
		img, _ := random.Image(256, 1)
		adds = append(adds, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: arch}}})
	}
	idx := mutate.AppendManifests(empty.Index, adds...)
	if err := remote.WriteIndex(r, idx); err != nil {
		t.Fatal(err)
	}
	d, _ := idx.Digest()
	return d.String()
}

// The bundle of a list: packages with their dependency closure from their
// sources into signed repositories, a chart, Kubeflow's manifests and
// remote bases, images (one filtered to the hosts' platform, one named by
// digest kept whole); the manifest verifies; a second run fetches nothing;
// a file changed is found; what cannot be had is named, and the bundle is
// not complete.
func TestCreate(t *testing.T) {
	site := newFakeSite(t)
	inv, dir := load(t, "demo.yaml")
	inv.Cluster.Spec.Mirrors.Registry = ""
	kf := fixtures.Dir(t, "kubeflow")
	inv.Cluster.Spec.Kubeflow.Manifests = filepath.Join(kf, "manifests-26.03.tar.gz")
	inv.Cluster.Spec.Kubeflow.RemoteBases = filepath.Join(kf, "remote-bases", "kubeflow-26.03-remote-bases.tar.gz")
	nvidiaRepo := site.nvidia.URL + "/cuda/repos/debian12/x86_64/"
	tagged := site.registry + "/library/tool:1"
	push(t, tagged, true)
	pinnedRef := site.registry + "/library/pinned:2"
	digest := push(t, pinnedRef, true)
	pinnedRef = site.registry + "/library/pinned@" + digest
	list := &List{Cluster: "t", Artifacts: []Artifact{
		{Kind: Package, Name: "nvidia-open", Version: "580.95.05", Family: "debian-12", Arch: "amd64",
			Repo: &Repo{URL: nvidiaRepo, Mirror: "nvidia", Path: "cuda/repos/debian12/x86_64/", KeyURL: nvidiaRepo + "key.asc", Fingerprints: []string{site.nvidiaKey}}},
		{Kind: Package, Name: "dkms", Family: "debian-12", Arch: "amd64"},
		{Kind: Chart, Name: "flannel", Version: "v0.28.9", Source: dir},
		{Kind: Manifests, Name: "kubeflow/manifests", Version: "26.03"},
		{Kind: RemoteBase, Name: "https://github.com/kubernetes-sigs/jobset/releases/download/v0.10.1/manifests.yaml"},
		{Kind: Image, Name: tagged, Source: "http://" + tagged},
		{Kind: Image, Name: pinnedRef, Source: "http://" + pinnedRef},
	}}
	opts := Options{
		OSMirrors:      map[string][]string{"debian-12": {site.distro.URL + "/", site.distro.URL + "/"}},
		Keyrings:       map[string]string{"debian-12": site.distroKeyring},
		OSFingerprints: map[string][]string{"debian-12": {site.distroKey}},
		Logf:           t.Logf,
	}
	out := filepath.Join(t.TempDir(), "bundle")
	m, stats, err := Create(context.Background(), inv, list, out, opts)
	if err != nil {
		t.Fatalf("%v\n%s", err, strings.Join(m.Missing, "\n"))
	}
	fetched := map[Kind]int{}
	for _, s := range stats {
		fetched[s.Kind] = s.Fetched
		t.Logf("%s: %d files, %d bytes, %d fetched, %s", s.Kind, s.Files, s.Bytes, s.Fetched, s.Took)
	}
	// nvidia-open 580.95.05 (not 570), its dependency and dkms from the
	// archive (not "unrelated"): 3 .debs; the chart, manifests + remote
	// bases, two images.
	if want := map[Kind]int{Package: 3, Chart: 1, Manifests: 2, Image: 2}; !equalCounts(fetched, want) {
		t.Errorf("fetched %v, want %v", fetched, want)
	}
	for _, f := range []string{
		"packages/nvidia/cuda/repos/debian12/x86_64/nvidia-open_580.95.05-1_amd64.deb",
		"packages/nvidia/cuda/repos/debian12/x86_64/InRelease",
		"packages/os/debian-12/gpukit-test-lib_2.1-1_amd64.deb",
		"packages/os/debian-12/dkms_3.0.10-8_amd64.deb",
		"charts/flannel-v0.28.9.tgz", "charts/index.yaml",
		"kubeflow/manifests-26.03.tar.gz", "kubeflow/remote-bases.tar.gz",
		"images/index.json", "key/bundle.asc", "bundle.json",
	} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
	for _, f := range []string{"packages/nvidia/cuda/repos/debian12/x86_64/nvidia-open_570.1.1-1_amd64.deb", "packages/os/debian-12/unrelated_1-1_amd64.deb"} {
		if _, err := os.Stat(filepath.Join(out, f)); err == nil {
			t.Errorf("%s is in the bundle", f)
		}
	}
	if st, err := os.Stat(filepath.Join(out, bundlefs.SecretKeyFile)); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("the private key: %v %v", st, err)
	}
	if slices.ContainsFunc(m.Files, func(f bundlefs.File) bool { return strings.HasPrefix(f.Path, "private/") }) {
		t.Error("the manifest lists the private key")
	}

	// The bundle's repositories are signed by its key: read, verified and
	// resolved as a host's apt would.
	pub, _ := os.ReadFile(filepath.Join(out, bundlefs.PublicKeyFile))
	srv := httptest.NewServer(http.FileServer(http.Dir(out)))
	defer srv.Close()
	get := debrepo.HTTPGetter(http.DefaultClient)
	var idx []*debrepo.Index
	for _, src := range []string{"/packages/nvidia/cuda/repos/debian12/x86_64/", "/packages/os/debian-12/"} {
		i, err := debrepo.Read(context.Background(), get, debrepo.Source{URL: srv.URL + src, Arch: "amd64", Keyring: pub, Fingerprints: []string{m.Fingerprint}})
		if err != nil {
			t.Fatal(err)
		}
		idx = append(idx, i)
	}
	if _, err := debrepo.Resolve(idx, "amd64", []debrepo.Want{{Name: "nvidia-open", Version: "580.95.05-1"}, {Name: "dkms"}}); err != nil {
		t.Errorf("the bundle's repositories do not hold the closure: %v", err)
	}

	// Images: the tagged index keeps linux/amd64 only; the digest's is whole.
	lp, err := layout.FromPath(filepath.Join(out, bundlefs.ImagesDir))
	if err != nil {
		t.Fatal(err)
	}
	ii, _ := lp.ImageIndex()
	im, _ := ii.IndexManifest()
	platforms := map[string]int{}
	for _, d := range im.Manifests {
		child, err := ii.ImageIndex(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cm, _ := child.IndexManifest()
		platforms[d.Annotations[bundlefs.RefAnnotation]] = len(cm.Manifests)
	}
	if platforms[tagged] != 1 || platforms[pinnedRef] != 2 {
		t.Errorf("platforms kept by image: %v", platforms)
	}
	if problems, err := bundlefs.Verify(out); err != nil || len(problems) > 0 {
		t.Errorf("verify: %v %v", problems, err)
	}

	// A second run fetches nothing and writes the same manifest's files.
	m2, stats, err := Create(context.Background(), inv, list, out, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range stats {
		if s.Fetched != 0 {
			t.Errorf("second run fetched %d %s", s.Fetched, s.Kind)
		}
	}
	if m2.Fingerprint != m.Fingerprint || !slices.Equal(m2.Files, m.Files) {
		t.Errorf("second run: another key or other files")
	}

	// A changed file is found; a removed one is fetched again.
	deb := filepath.Join(out, "packages/os/debian-12/dkms_3.0.10-8_amd64.deb")
	os.WriteFile(deb, []byte("not a deb"), 0o644)
	os.Remove(filepath.Join(out, "charts/flannel-v0.28.9.tgz"))
	problems, _ := bundlefs.Verify(out)
	if len(problems) != 2 || !strings.Contains(strings.Join(problems, "\n"), "dkms_3.0.10-8_amd64.deb: 9 bytes") {
		t.Errorf("verify after changes: %q", problems)
	}
	_, stats, err = Create(context.Background(), inv, list, out, opts)
	if err != nil {
		t.Fatal(err)
	}
	fetched = map[Kind]int{}
	for _, s := range stats {
		fetched[s.Kind] = s.Fetched
	}
	if want := map[Kind]int{Package: 1, Chart: 1}; !equalCounts(fetched, want) {
		t.Errorf("after changes, fetched %v, want %v: the changed .deb and the removed chart", fetched, want)
	}
	if problems, err := bundlefs.Verify(out); err != nil || len(problems) > 0 {
		t.Errorf("verify after the third run: %v %v", problems, err)
	}

	// What cannot be had is named; the bundle says it is not complete.
	list.Artifacts = append(list.Artifacts, Artifact{Kind: Image, Name: site.registry + "/library/absent:1", Source: "http://" + site.registry + "/library/absent:1"},
		Artifact{Kind: Package, Name: "no-such-package", Family: "debian-12", Arch: "amd64"})
	m, _, err = Create(context.Background(), inv, list, out, opts)
	if err == nil || m.Complete || len(m.Missing) != 2 {
		t.Fatalf("with two artifacts that cannot be had: %v, %+v", err, m.Missing)
	}
	if problems, _ := bundlefs.Verify(out); len(problems) != 1 || !strings.Contains(problems[0], "not complete") {
		t.Errorf("verify of an incomplete bundle: %q", problems)
	}
}

func equalCounts(got, want map[Kind]int) bool {
	for k, n := range want {
		if got[k] != n {
			return false
		}
	}
	return true
}

// What a bundle host serves: the package repositories to apt (through
// debrepo, as TestCreate reads them) and nothing else of the directory; the
// images to a registry client as a mirror's names give them, by tag and by
// digest, byte for byte as pulled; nothing can be pushed.
func TestServe(t *testing.T) {
	site := newFakeSite(t)
	inv, _ := load(t, "demo.yaml")
	inv.Cluster.Spec.Mirrors.Registry = ""
	tagged := site.registry + "/library/tool:1"
	want := push(t, tagged, false)
	list := &List{Cluster: "t", Artifacts: []Artifact{{Kind: Image, Name: "registry.k8s.io/pause:3.10.2", Source: "http://" + tagged}}}
	out := filepath.Join(t.TempDir(), "bundle")
	if _, _, err := Create(context.Background(), inv, list, out, Options{}); err != nil {
		t.Fatal(err)
	}

	files := httptest.NewServer(bundlefs.Files(out))
	defer files.Close()
	for path, code := range map[string]int{"/" + bundlefs.PublicKeyFile: 200, "/" + bundlefs.ManifestFile: 404, "/" + bundlefs.SecretKeyFile: 404, "/packages/": 404,
		"/images/index.json": 404, "/../" + bundlefs.SecretKeyFile: 404} {
		resp, err := http.Get(files.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != code {
			t.Errorf("GET %s: %d, want %d", path, resp.StatusCode, code)
		}
	}

	reg := httptest.NewTLSServer(bundlefs.NewRegistry(out))
	defer reg.Close()
	host := strings.TrimPrefix(reg.URL, "https://")
	opt := remote.WithTransport(reg.Client().Transport)
	ref, _ := name.ParseReference(host + "/registry.k8s.io/pause:3.10.2")
	img, err := remote.Image(ref, opt)
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := img.Digest(); d.String() != want {
		t.Errorf("pulled %s, pushed %s", d, want)
	}
	layers, _ := img.Layers()
	for _, l := range layers {
		rc, err := l.Compressed() // the blobs, checked against their digests as read
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(io.Discard, rc); err != nil {
			t.Fatal(err)
		}
		if err := rc.Close(); err != nil {
			t.Fatalf("layer: %v", err)
		}
	}
	byDigest, _ := name.ParseReference(host + "/registry.k8s.io/pause@" + want)
	if _, err := remote.Image(byDigest, opt); err != nil {
		t.Errorf("by digest: %v", err)
	}
	for _, absent := range []string{"/registry.k8s.io/pause:3.10.1", "/docker.io/library/pause:3.10.2"} {
		r, _ := name.ParseReference(host + absent)
		if _, err := remote.Image(r, opt); err == nil || !strings.Contains(err.Error(), "MANIFEST_UNKNOWN") {
			t.Errorf("%s: %v", absent, err)
		}
	}
	other, _ := random.Image(64, 1)
	if err := remote.Write(ref, other, opt); err == nil {
		t.Error("a push to the bundle's registry succeeded")
	}
}

// A bundle made from a list keeps the chart archives the list rendered:
// they are not fetched a second time (here the chart source is gone by
// then, and the chart is bundled all the same, byte for byte).
func TestCreateKeepsTheListsCharts(t *testing.T) {
	inv, dir := load(t, "demo.yaml")
	l, err := Compute(context.Background(), inv, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	l.Artifacts = l.Of(Chart)
	inv.Cluster.Spec.Mirrors.Charts = t.TempDir() // no archives there
	out := filepath.Join(t.TempDir(), "bundle")
	m, stats, err := Create(context.Background(), inv, l, out, Options{})
	if err != nil {
		t.Fatalf("%v %v", err, m.Missing)
	}
	want, _ := os.ReadFile(filepath.Join(dir, "flannel-v0.28.9.tgz"))
	if got, _ := os.ReadFile(filepath.Join(out, "charts", "flannel-v0.28.9.tgz")); !bytes.Equal(got, want) || len(want) == 0 {
		t.Errorf("the bundle's flannel archive is not the one listed (%d bytes, want %d)", len(got), len(want))
	}
	for _, s := range stats {
		if s.Kind == Chart && s.Fetched != 1 {
			t.Errorf("charts: %d put in the bundle, want 1", s.Fetched)
		}
	}
}
