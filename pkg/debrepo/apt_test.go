package debrepo

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestAptAccepts points Debian's apt at a repository WriteFlat wrote, and at
// one WriteDists wrote:
// apt-get update verifies its signature with gpgv against the signed-by
// key, and apt-get install --download-only resolves a package's
// dependency in it and fetches both .debs, checking their hashes. A key
// other than the signer's makes update fail. It runs where apt-get, gpgv
// and dpkg-deb are (Debian and Ubuntu).
func TestAptAccepts(t *testing.T) {
	for _, tool := range []string{"/usr/bin/apt-get", "/usr/bin/gpgv", "/usr/bin/dpkg-deb"} {
		if _, err := os.Stat(tool); err != nil {
			t.Skipf("no %s: not a Debian host", tool)
		}
	}
	t.Run("flat", func(t *testing.T) { aptAccepts(t, false) })
	t.Run("dists", func(t *testing.T) { aptAccepts(t, true) })
}

func aptAccepts(t *testing.T, dists bool) {
	tmp := t.TempDir()
	repo := filepath.Join(tmp, "repo")
	os.Mkdir(repo, 0o755)
	var index bytes.Buffer
	for _, c := range []struct{ name, depends string }{
		{"gpukit-apt-test", "gpukit-apt-test-lib (>= 1.0)"},
		{"gpukit-apt-test-lib", ""},
	} {
		deb := buildDeb(t, tmp, c.name, c.depends)
		control, err := exec.Command("dpkg-deb", "-f", deb).Output()
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(deb)
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Base(deb)
		fmt.Fprintf(&index, "%sFilename: pool/main/%s\nSize: %d\nSHA256: %x\n\n", control, name, len(b), sha256.Sum256(b))
		dst := filepath.Join(repo, name)
		if dists {
			os.MkdirAll(PoolDir(repo, "stable"), 0o755)
			dst = filepath.Join(PoolDir(repo, "stable"), name)
		}
		if err := os.Rename(deb, dst); err != nil {
			t.Fatal(err)
		}
	}
	pkgs, err := ParsePackages("http://upstream.test", index.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	key := newKey(t)
	line := "/ ./"
	if dists {
		line = "/ bookworm stable"
		err = WriteDists(repo, "bookworm", "stable", "amd64", pkgs, key, "gpukit bundle")
	} else {
		err = WriteFlat(repo, pkgs, key, "gpukit bundle")
	}
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.FileServer(http.Dir(repo)))
	defer srv.Close()

	apt := func(keyFile string, args ...string) (string, error) {
		os.WriteFile(filepath.Join(tmp, "sources.list"), []byte("deb [signed-by="+keyFile+"] "+srv.URL+line+"\n"), 0o644)
		os.WriteFile(filepath.Join(tmp, "status"), nil, 0o644)
		for _, d := range []string{"lists/partial", "cache/archives/partial", "preferences.d"} {
			os.MkdirAll(filepath.Join(tmp, d), 0o755)
		}
		opts := []string{
			"-o", "Dir::Etc::sourcelist=" + filepath.Join(tmp, "sources.list"), "-o", "Dir::Etc::sourceparts=-",
			"-o", "Dir::State::Lists=" + filepath.Join(tmp, "lists"), "-o", "Dir::Cache=" + filepath.Join(tmp, "cache"),
			"-o", "Dir::State::status=" + filepath.Join(tmp, "status"), "-o", "Dir::Etc::preferencesparts=" + filepath.Join(tmp, "preferences.d"),
			"-o", "Debug::NoLocking=1", "-o", "Acquire::Languages=none",
		}
		if os.Getuid() == 0 { // else apt downloads as _apt, who cannot write the test's directories
			opts = append(opts, "-o", "APT::Sandbox::User=root")
		}
		cmd := exec.Command("apt-get", append(opts, args...)...)
		cmd.Env = append(os.Environ(), "LC_ALL=C", "DEBIAN_FRONTEND=noninteractive")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	writeKey := func(name string, b []byte) string {
		path := filepath.Join(tmp, name)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}

	good := writeKey("bundle.asc", publicKey(t, key))
	out, err := apt(good, "update")
	if err != nil || strings.Contains(out, "W:") || strings.Contains(out, "E:") {
		t.Fatalf("apt-get update: %v\n%s", err, out)
	}
	out, err = apt(good, "install", "--download-only", "-y", "--no-install-recommends", "gpukit-apt-test")
	if err != nil || strings.Contains(out, "W:") {
		t.Fatalf("apt-get install --download-only: %v\n%s", err, out)
	}
	for _, p := range pkgs {
		if _, err := os.Stat(filepath.Join(tmp, "cache/archives", p.DebName())); err != nil {
			t.Errorf("apt did not fetch %s: %v\n%s", p, err, out)
		}
	}

	os.RemoveAll(filepath.Join(tmp, "lists"))
	other := writeKey("other.asc", publicKey(t, newKey(t)))
	if out, err := apt(other, "update"); err == nil || !strings.Contains(out, "NO_PUBKEY "+Fingerprint(key)[24:]) {
		t.Errorf("apt-get update with another key: %v\n%s", err, out)
	}
}

// buildDeb makes a tiny architecture-all .deb with dpkg-deb.
func buildDeb(t *testing.T, tmp, name, depends string) string {
	t.Helper()
	root := filepath.Join(tmp, name)
	if err := os.MkdirAll(filepath.Join(root, "DEBIAN"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(root, "usr/share/doc", name), 0o755)
	os.WriteFile(filepath.Join(root, "usr/share/doc", name, "README"), []byte("a test of gpukit's bundles\n"), 0o644)
	control := "Package: " + name + "\nVersion: 1.0-1\nArchitecture: all\nMaintainer: gpukit <gpukit@example.invalid>\n"
	if depends != "" {
		control += "Depends: " + depends + "\n"
	}
	control += "Description: a package of gpukit's tests\n that apt installs from a bundle\n"
	if err := os.WriteFile(filepath.Join(root, "DEBIAN/control"), []byte(control), 0o644); err != nil {
		t.Fatal(err)
	}
	deb := filepath.Join(tmp, name+"_1.0-1_all.deb")
	if out, err := exec.Command("dpkg-deb", "--root-owner-group", "--build", root, deb).CombinedOutput(); err != nil {
		t.Fatalf("dpkg-deb: %v\n%s", err, out)
	}
	return deb
}
