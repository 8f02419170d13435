package aptrepo

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

const testUID = "aptrepo test key (test only) <aptrepo@gpukit.invalid>"

func TestFileName(t *testing.T) {
	for _, c := range []struct{ name, version, arch, want string }{
		{"kubelet", "1.35.0-1.1", "amd64", "kubelet_1.35.0-1.1_amd64.deb"},
		{"cuda-keyring", "1.1-1", "all", "cuda-keyring_1.1-1_all.deb"},
		{"containerd", "1:2.1.4-1", "arm64", "containerd_2.1.4-1_arm64.deb"}, // the epoch is not in file names
		{"x", "2:1.0:rc1-1", "amd64", "x_1.0:rc1-1_amd64.deb"},               // only the epoch goes
	} {
		if got := (Deb{Name: c.name, Version: c.version, Arch: c.arch}).FileName(); got != c.want {
			t.Errorf("FileName of %s %s = %q, want %q", c.name, c.version, got, c.want)
		}
	}
}

func TestControl(t *testing.T) {
	for _, c := range []struct {
		name string
		deb  Deb
		want string
	}{{
		name: "only the required fields; Priority defaults to optional",
		deb:  Deb{Name: "kubectl", Version: "1.35.0-1.1", Arch: "amd64"},
		want: "Package: kubectl\nVersion: 1.35.0-1.1\nArchitecture: amd64\nPriority: optional\n",
	}, {
		name: "every field",
		deb: Deb{Name: "kubelet", Version: "1:1.35.0-1.1", Arch: "arm64", Maintainer: "Lab <lab@gpukit.invalid>",
			Depends: "iptables (>= 1.4.21), kubernetes-cni (>= 1.2.0)", Recommends: "conntrack", Conflicts: "kubelet-old",
			Provides: "kubelet-any", Replaces: "kubelet-old", Breaks: "kubeadm (<< 1.35)",
			Section: "admin", Priority: "important", Homepage: "https://kubernetes.io", Description: "Node agent"},
		want: "Package: kubelet\nVersion: 1:1.35.0-1.1\nArchitecture: arm64\nMaintainer: Lab <lab@gpukit.invalid>\n" +
			"Depends: iptables (>= 1.4.21), kubernetes-cni (>= 1.2.0)\nRecommends: conntrack\nConflicts: kubelet-old\n" +
			"Breaks: kubeadm (<< 1.35)\nReplaces: kubelet-old\nProvides: kubelet-any\n" +
			"Section: admin\nPriority: important\nHomepage: https://kubernetes.io\nDescription: Node agent\n",
	}, {
		name: "multi-line description: leading spaces, an empty line as ' .', a trailing newline dropped",
		deb:  Deb{Name: "kubeadm", Version: "1.35.0-1.1", Arch: "amd64", Description: "Cluster bootstrapping tool\nkubeadm makes clusters.\n\n  verbatim line\n"},
		want: "Package: kubeadm\nVersion: 1.35.0-1.1\nArchitecture: amd64\nPriority: optional\n" +
			"Description: Cluster bootstrapping tool\n kubeadm makes clusters.\n .\n   verbatim line\n",
	}} {
		if got := c.deb.Control(); got != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
		}
	}
}

func TestConffiles(t *testing.T) {
	d := Deb{Files: []File{
		{Path: "/etc/default/kubelet", Data: []byte("x")},
		{Path: "/etc/alternatives/kubelet", Link: "/usr/bin/kubelet"}, // a symlink is no conffile
		{Path: "/usr/bin/kubelet", Data: []byte("x")},
		{Path: "/etcetera/x", Data: []byte("x")},
		{Path: "/etc/kubernetes/big", Src: "/nonexistent"},
	}}
	if got, want := d.Conffiles(), "/etc/default/kubelet\n/etc/kubernetes/big\n"; got != want {
		t.Errorf("Conffiles = %q, want %q", got, want)
	}
}

func TestHash(t *testing.T) {
	src := filepath.Join(t.TempDir(), "kubelet")
	if err := os.WriteFile(src, []byte("ELF kubelet"), 0o755); err != nil {
		t.Fatal(err)
	}
	tree := func(data string, mod func(*Tree)) Tree {
		tr := Tree{
			Repos: map[string]Repo{
				"core/stable/v1.35/deb/": {Release: Release{Origin: "lab", Label: "k8s", Archs: []string{"amd64"}},
					Debs: []Deb{{Name: "kubelet", Version: "1.35.0-1.1", Arch: "amd64", Files: []File{
						{Path: "/usr/bin/kubelet", Mode: 0o755, Data: []byte(data)}}}}},
				"core/stable/v1.34/deb/": {Release: Release{Origin: "lab", Label: "k8s", Archs: []string{"amd64"}}},
			},
			Files: map[string][]byte{"README": []byte("lab")},
			Key:   Key{Fingerprint: "F00"},
		}
		if mod != nil {
			mod(&tr)
		}
		return tr
	}
	hash := func(tr Tree) string {
		t.Helper()
		h, err := tr.Hash()
		if err != nil {
			t.Fatal(err)
		}
		if len(h) != 16 {
			t.Fatalf("hash %q: want 16 hex digits", h)
		}
		return h
	}
	base := hash(tree("ELF kubelet", nil))
	for range 5 { // maps in any order
		if h := hash(tree("ELF kubelet", nil)); h != base {
			t.Fatalf("the same tree hashes to %s and %s", base, h)
		}
	}
	viaSrc := hash(tree("", func(tr *Tree) {
		tr.Repos["core/stable/v1.35/deb/"].Debs[0].Files[0] = File{Path: "/usr/bin/kubelet", Mode: 0o755, Src: src}
	}))
	if viaSrc != base {
		t.Errorf("the same bytes from Src hash to %s, from Data to %s", viaSrc, base)
	}
	for name, h := range map[string]string{
		"a file's bytes": hash(tree("ELF kubelet!", nil)),
		"the key":        hash(tree("ELF kubelet", func(tr *Tree) { tr.Key.Fingerprint = "BEEF" })),
		"a release field": hash(tree("ELF kubelet", func(tr *Tree) {
			r := tr.Repos["core/stable/v1.34/deb/"]
			r.Release.Suite = "x"
			tr.Repos["core/stable/v1.34/deb/"] = r
		})),
		"an extra file": hash(tree("ELF kubelet", func(tr *Tree) { tr.Files["README"] = []byte("lab!") })),
		"a script": hash(tree("ELF kubelet", func(tr *Tree) {
			tr.Repos["core/stable/v1.35/deb/"].Debs[0].Scripts = map[string]string{"postinst": "#!/bin/sh\n"}
		})),
		"a file's mode": hash(tree("ELF kubelet", func(tr *Tree) { tr.Repos["core/stable/v1.35/deb/"].Debs[0].Files[0].Mode = 0o750 })),
	} {
		if h == base {
			t.Errorf("changing %s leaves the hash %s", name, h)
		}
	}
	if err := os.WriteFile(src, []byte("ELF kubelet, rebuilt"), 0o755); err != nil {
		t.Fatal(err)
	}
	if h := hash(tree("", func(tr *Tree) {
		tr.Repos["core/stable/v1.35/deb/"].Debs[0].Files[0] = File{Path: "/usr/bin/kubelet", Mode: 0o755, Src: src}
	})); h == viaSrc {
		t.Error("changing a Src file's bytes leaves the hash")
	}
	if _, err := tree("", func(tr *Tree) { tr.Repos["core/stable/v1.35/deb/"].Debs[0].Files[0].Src = "/nonexistent" }).Hash(); err == nil {
		t.Error("Hash of a tree with a missing Src file: no error")
	}
}

func TestLoadKeyMakesOneKey(t *testing.T) {
	RequireTools(t, "gpg")
	dir := filepath.Join(t.TempDir(), "key")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const n = 3
	keys := make([]Key, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { keys[i], errs[i] = LoadKey(ctx, dir, testUID) })
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if keys[i].Fingerprint != keys[0].Fingerprint || keys[0].Fingerprint == "" {
			t.Fatalf("concurrent LoadKey: fingerprints %q and %q", keys[i].Fingerprint, keys[0].Fingerprint)
		}
	}
	again, err := LoadKey(ctx, dir, "")
	if err != nil || again.Fingerprint != keys[0].Fingerprint {
		t.Fatalf("LoadKey again: %v, %q, want the kept key %q", err, again.Fingerprint, keys[0].Fingerprint)
	}
	if !bytes.Contains(again.Armored, []byte("BEGIN PGP PUBLIC KEY BLOCK")) || len(again.Binary) == 0 || bytes.Contains(again.Binary, []byte("BEGIN")) {
		t.Error("the public key is not there ASCII-armored and binary")
	}
	st, err := os.Stat(filepath.Join(dir, "secret.asc"))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("secret.asc: %v %v, want mode 0600", err, st)
	}
	if _, err := LoadKey(ctx, filepath.Join(t.TempDir(), "none"), ""); err == nil || !strings.HasPrefix(err.Error(), "aptrepo: ") {
		t.Errorf("LoadKey without a key or a user ID: %v", err)
	}
}

// publishSetup: the tools, a context, a directory and a key for a Publish
// test.
func publishSetup(t *testing.T) (context.Context, string, Key) {
	t.Helper()
	RequireTools(t, "dpkg-deb", "dpkg-scanpackages", "gpg", "gpgv")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	tmp := t.TempDir()
	key, err := LoadKey(ctx, filepath.Join(tmp, "key"), testUID)
	if err != nil {
		t.Fatal(err)
	}
	return ctx, tmp, key
}

func TestPublish(t *testing.T) {
	ctx, tmp, key := publishSetup(t)
	// a Src of another mode than the package's: copied, never chmod-ed
	src := filepath.Join(tmp, "kubelet")
	if err := os.WriteFile(src, []byte("#!/bin/sh\necho kubelet\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	same := filepath.Join(tmp, "kubectl")
	if err := os.WriteFile(same, []byte("#!/bin/sh\necho kubectl\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(same, 0o755); err != nil { // whatever the umask
		t.Fatal(err)
	}
	kubelet := Deb{Name: "kubelet", Version: "1.35.0-1.1", Arch: "amd64", Maintainer: "Lab <lab@gpukit.invalid>",
		Depends: "kubectl", Description: "Node agent\nThe lab's kubelet.\n\nTest only.",
		Files: []File{
			{Path: "/usr/bin/kubelet", Mode: 0o755, Src: src},
			{Path: "/etc/default/kubelet", Mode: 0o644, Data: []byte("KUBELET_EXTRA_ARGS=\n")},
			{Path: "/usr/sbin/kubelet", Link: "../bin/kubelet"},
		},
		Scripts: map[string]string{"postinst": "#!/bin/sh\nset -e\n"}}
	kubectl := Deb{Name: "kubectl", Version: "1:1.35.0-1.1", Arch: "amd64", Description: "Command-line client",
		Files: []File{{Path: "/usr/bin/kubectl", Mode: 0o755, Src: same}}}
	const sub = "core:/stable:/v1.35/deb/"
	tree := Tree{
		Repos: map[string]Repo{sub: {Debs: []Deb{kubelet, kubectl},
			Release: Release{Origin: "lab", Label: "lab k8s", Archs: []string{"amd64", "all"}, Description: "test"}}},
		Files: map[string][]byte{"core:/stable:/v1.35/deb/Release.key": key.Armored},
		Key:   key,
	}
	root := filepath.Join(tmp, "www")
	// an abandoned half-built tree and an old unused one go; a recent one stays
	old := time.Now().Add(-8 * 24 * time.Hour)
	for _, d := range []string{".tmp-0123456789abcdef-1", "0123456789abcdef", "fedcba9876543210"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
		if d != "fedcba9876543210" {
			if err := os.Chtimes(filepath.Join(root, d), old, old); err != nil {
				t.Fatal(err)
			}
		}
	}
	dir, hash, reused, err := tree.Publish(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	if reused || dir != filepath.Join(root, hash) {
		t.Fatalf("first Publish: %s %s reused=%v", dir, hash, reused)
	}
	if h, _ := tree.Hash(); h != hash {
		t.Errorf("Publish's hash %s, Hash %s", hash, h)
	}
	entries, _ := os.ReadDir(root)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if want := []string{hash, "fedcba9876543210"}; fmt.Sprint(names) != fmt.Sprint(want) && fmt.Sprint(names) != fmt.Sprint([]string{want[1], want[0]}) {
		t.Errorf("root holds %v, want %v (old and half-built trees pruned)", names, want)
	}
	if st, _ := os.Stat(src); st.Mode().Perm() != 0o700 {
		t.Errorf("building changed the Src file's mode to %v", st.Mode())
	}

	repo := filepath.Join(dir, sub)
	keyring := filepath.Join(tmp, "keyring.gpg")
	if err := os.WriteFile(keyring, key.Binary, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("gpgv", "--keyring", keyring, filepath.Join(repo, "InRelease")).CombinedOutput(); err != nil {
		t.Errorf("InRelease does not verify with the key: %v\n%s", err, out)
	}
	if out, err := exec.Command("gpgv", "--keyring", keyring, filepath.Join(repo, "Release.gpg"), filepath.Join(repo, "Release")).CombinedOutput(); err != nil {
		t.Errorf("Release.gpg does not verify: %v\n%s", err, out)
	}
	checkRelease(t, repo, "Origin: lab\nLabel: lab k8s\nArchitectures: amd64 all\n")
	packages, _ := os.ReadFile(filepath.Join(repo, "Packages"))
	for _, want := range []string{"Package: kubelet\nVersion: 1.35.0-1.1\n", "Package: kubectl\nVersion: 1:1.35.0-1.1\n",
		"Filename: ./kubectl_1.35.0-1.1_amd64.deb\n", "Description: Node agent\n The lab's kubelet.\n .\n Test only.\n"} {
		if !strings.Contains(string(packages), want) {
			t.Errorf("Packages lacks %q:\n%s", want, packages)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(repo, "Release.key")); !bytes.Equal(b, key.Armored) {
		t.Error("the extra file is not there")
	}
	// the package as built: the control file as Control wrote it, files, modes, link, conffiles, script
	deb := filepath.Join(repo, kubelet.FileName())
	if out, err := exec.Command("dpkg-deb", "--info", deb, "control").Output(); err != nil || string(out) != kubelet.Control() {
		t.Errorf("control in the package (%v):\n%s\nwant\n%s", err, out, kubelet.Control())
	}
	if out, err := exec.Command("dpkg-deb", "--info", deb, "conffiles").Output(); err != nil || string(out) != "/etc/default/kubelet\n" {
		t.Errorf("conffiles in the package (%v): %q", err, out)
	}
	if out, err := exec.Command("dpkg-deb", "--info", deb, "postinst").Output(); err != nil || string(out) != kubelet.Scripts["postinst"] {
		t.Errorf("postinst in the package (%v): %q", err, out)
	}
	for name, want := range map[string][]string{
		kubelet.FileName(): {"-rwxr-xr-x 23 ./usr/bin/kubelet", "-rw-r--r-- 20 ./etc/default/kubelet", "lrwxrwxrwx 0 ./usr/sbin/kubelet -> ../bin/kubelet"},
		kubectl.FileName(): {"-rwxr-xr-x 23 ./usr/bin/kubectl"},
	} {
		got := contents(t, filepath.Join(repo, name))
		for _, w := range want {
			if !slices.Contains(got, w) {
				t.Errorf("%s lacks %q: %q", name, w, got)
			}
		}
	}

	began := time.Now().Add(-time.Second)
	again, hash2, reused, err := tree.Publish(ctx, root)
	if err != nil || !reused || again != dir || hash2 != hash {
		t.Fatalf("second Publish: %s %s reused=%v %v, want %s reused", again, hash2, reused, err, dir)
	}
	if st, _ := os.Stat(dir); st.ModTime().Before(began) {
		t.Error("a reused tree's time is not touched (prune would take it)")
	}
	bad := Tree{Repos: map[string]Repo{"../outside/": {}}, Key: key}
	if _, _, _, err := bad.Publish(ctx, root); err == nil || !strings.HasPrefix(err.Error(), "aptrepo: ") {
		t.Errorf("Publish of a repository outside the tree: %v", err)
	}
}

// contents lists deb's files as "mode size path[ -> target]", owned by root.
func contents(t *testing.T, deb string) []string {
	t.Helper()
	out, err := exec.Command("dpkg-deb", "--contents", deb).Output()
	if err != nil {
		t.Fatalf("dpkg-deb --contents %s: %v", deb, err)
	}
	var files []string
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line) // mode owner size date time path [-> target]
		if len(f) < 6 || f[1] != "root/root" {
			t.Fatalf("dpkg-deb --contents %s: %q", deb, line)
		}
		if !strings.HasSuffix(f[5], "/") {
			files = append(files, strings.Join(append([]string{f[0], f[2]}, f[5:]...), " "))
		}
	}
	return files
}

// CopyFile copies, whatever the modes: a hard link shared by two builds makes
// tar fail (its ctime moves when the other links it).
func TestCopyFileNeverLinks(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	if err := os.WriteFile(src, []byte("bytes"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(src, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []os.FileMode{0o755, 0o644} {
		dst := filepath.Join(dir, "tree", mode.String(), "usr/bin/x")
		if err := CopyFile(src, dst, mode); err != nil {
			t.Fatal(err)
		}
		a, _ := os.Stat(src)
		b, err := os.Stat(dst)
		if err != nil {
			t.Fatal(err)
		}
		if os.SameFile(a, b) || b.Mode() != mode || a.Mode() != 0o755 {
			t.Errorf("CopyFile with mode %v: same file %v, mode %v, src's mode %v", mode, os.SameFile(a, b), b.Mode(), a.Mode())
		}
		if got, _ := os.ReadFile(dst); string(got) != "bytes" {
			t.Errorf("CopyFile with mode %v: %q", mode, got)
		}
	}
}

// checkRelease checks that dir's Release begins with head and that its
// SHA256 sums and sizes are those of Packages and Packages.gz, and that
// Packages.gz is Packages compressed.
func checkRelease(t *testing.T, dir, head string) {
	t.Helper()
	rel, err := os.ReadFile(filepath.Join(dir, "Release"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(rel), head) || !strings.Contains(string(rel), "\nDate: ") {
		t.Errorf("Release:\n%s\nwant it to begin with\n%s", rel, head)
	}
	sums := 0
	sc := bufio.NewScanner(bytes.NewReader(rel))
	inSHA := false
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, " ") {
			inSHA = line == "SHA256:"
			continue
		}
		f := strings.Fields(line)
		if !inSHA || len(f) != 3 {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, f[2]))
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprintf("%x", sha256.Sum256(b)) != f[0] || strconv.Itoa(len(b)) != f[1] {
			t.Errorf("Release says %s for %s: sum or size wrong", line, f[2])
		}
		sums++
	}
	if sums != 2 {
		t.Errorf("Release lists %d files, want Packages and Packages.gz", sums)
	}
	packages, _ := os.ReadFile(filepath.Join(dir, "Packages"))
	gz, _ := os.ReadFile(filepath.Join(dir, "Packages.gz"))
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		t.Fatal(err)
	}
	if b, err := io.ReadAll(zr); err != nil || !bytes.Equal(b, packages) {
		t.Errorf("Packages.gz is not Packages compressed: %v", err)
	}
}

// A Dist repository is laid out as Docker's: apt finds it from "deb URL
// bookworm stable" (dists/bookworm/InRelease naming stable/binary-amd64/
// Packages, whose Filename fields lead to the pool).
func TestPublishDist(t *testing.T) {
	ctx, tmp, key := publishSetup(t)
	d := Deb{Name: "containerd.io", Version: "2.4.2-1~debian.12~bookworm", Arch: "amd64", Description: "runtime",
		Files: []File{{Path: "/usr/bin/containerd", Mode: 0o755, Data: []byte("#!/bin/sh\n")}}}
	rel := Release{Origin: "Docker", Label: "Docker CE", Suite: "bookworm", Codename: "bookworm", Archs: []string{"amd64"}}
	tree := Tree{Repos: map[string]Repo{"linux/debian/": {Debs: []Deb{d}, Release: rel, Dist: &Dist{Codename: "bookworm", Component: "stable"}}}, Key: key}
	dir, _, _, err := tree.Publish(ctx, filepath.Join(tmp, "www"))
	if err != nil {
		t.Fatal(err)
	}
	repo := filepath.Join(dir, "linux", "debian")
	if _, err := os.Stat(filepath.Join(repo, "dists/bookworm/pool/stable/amd64", d.FileName())); err != nil {
		t.Errorf("the package is not in the pool: %v", err)
	}
	keyring := filepath.Join(tmp, "keyring.gpg")
	if err := os.WriteFile(keyring, key.Binary, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("gpgv", "--keyring", keyring, filepath.Join(repo, "dists/bookworm/InRelease")).CombinedOutput(); err != nil {
		t.Errorf("InRelease does not verify: %v\n%s", err, out)
	}
	release, _ := os.ReadFile(filepath.Join(repo, "dists/bookworm/Release"))
	packages, _ := os.ReadFile(filepath.Join(repo, "dists/bookworm/stable/binary-amd64/Packages"))
	if want := fmt.Sprintf(" %x %d stable/binary-amd64/Packages\n", sha256.Sum256(packages), len(packages)); !strings.Contains(string(release), want) ||
		!strings.Contains(string(release), "Codename: bookworm\nArchitectures: amd64 all\nComponents: stable\n") {
		t.Errorf("Release:\n%s\nwant the Codename, Components and %q", release, want)
	}
	if want := "Filename: dists/bookworm/pool/stable/amd64/" + d.FileName() + "\n"; !strings.Contains(string(packages), want) {
		t.Errorf("Packages lacks %q:\n%s", want, packages)
	}
	two := Tree{Repos: map[string]Repo{"x/": {Debs: []Deb{d}, Release: Release{Archs: []string{"amd64", "arm64"}}, Dist: &Dist{Codename: "c", Component: "s"}}}, Key: key}
	if _, _, _, err := two.Publish(ctx, filepath.Join(tmp, "www")); err == nil || !strings.Contains(err.Error(), "one architecture") {
		t.Errorf("a dists repository of two architectures: %v", err)
	}
}
