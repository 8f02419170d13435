package debrepo

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ulikunitz/xz"
)

// TestReadDists reads a repository of the dists layout, as Debian's and
// Ubuntu's are: an xz index per architecture, the plain one listed but
// not served, and architecture all's apart.
func TestReadDists(t *testing.T) {
	key := newKey(t)
	root := t.TempDir()
	files := map[string][]byte{
		"main/binary-amd64/Packages": []byte(index(t, "Package: a\nVersion: 1\nDepends: b").Packages[0].stanza + "\n"),
		"main/binary-all/Packages":   []byte(index(t, "Package: b\nVersion: 2\nArchitecture: all").Packages[0].stanza + "\n"),
	}
	var sums strings.Builder
	for path, text := range files {
		var xzed bytes.Buffer
		w, err := xz.NewWriter(&xzed)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(text)
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		for name, b := range map[string][]byte{path: text, path + ".xz": xzed.Bytes()} {
			fmt.Fprintf(&sums, " %x %d %s\n", sha256.Sum256(b), len(b), name)
		}
		dst := filepath.Join(root, "dists/stable", path+".xz")
		os.MkdirAll(filepath.Dir(dst), 0o755)
		if err := os.WriteFile(dst, xzed.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	release := "Origin: Test\nSuite: stable\nArchitectures: all amd64 arm64\nComponents: main contrib\nSHA256:\n" + sums.String()
	in, _, err := sign([]byte(release), key)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(root, "dists/stable/InRelease"), in, 0o644)
	srv := httptest.NewServer(http.FileServer(http.Dir(root)))
	defer srv.Close()
	src := Source{URL: srv.URL, Suite: "stable", Components: []string{"main"}, Arch: "amd64", Keyring: publicKey(t, key), Fingerprints: []string{Fingerprint(key)}}
	get := HTTPGetter(srv.Client())
	idx, err := Read(context.Background(), get, src)
	if err != nil {
		t.Fatal(err)
	}
	if names(idx.Packages) != "a=1 b=2" || idx.Packages[0].URL() != srv.URL+"/pool/a_1_amd64.deb" {
		t.Errorf("read %s, a at %s", names(idx.Packages), idx.Packages[0].URL())
	}
	for _, tc := range []struct {
		change func(s *Source)
		err    string
	}{
		{func(s *Source) { s.Arch = "riscv64" }, "/dists/stable/Release: no architecture riscv64 (only all amd64 arm64)"},
		{func(s *Source) { s.Components = []string{"non-free"} }, "/dists/stable/Release: no component non-free"},
		{func(s *Source) { s.Components = []string{"contrib"} }, "/dists/stable/Release: no Packages index for contrib/binary-amd64"},
		{func(s *Source) { s.Components = nil }, "/dists/stable: no component"},
		{func(s *Source) { s.URL = "repo.test" }, `source "repo.test": not a URL`},
	} {
		s := src
		tc.change(&s)
		if _, err := Read(context.Background(), get, s); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("error %v, want %q", err, tc.err)
		}
	}
}

func TestLayout(t *testing.T) {
	for _, tc := range []struct {
		url, suite, dir string
		flat            bool
	}{
		{"http://r.test/cuda/repos/ubuntu2204/x86_64/", "/", "http://r.test/cuda/repos/ubuntu2204/x86_64", true},
		{"http://r.test/x", "", "http://r.test/x", true},
		{"http://r.test/x/", "./", "http://r.test/x", true},
		{"http://r.test/x", "amd64/", "http://r.test/x/amd64", true},
		{"http://r.test/x", "./amd64/", "http://r.test/x/amd64", true},
		{"http://deb.debian.org/debian/", "bookworm", "http://deb.debian.org/debian/dists/bookworm", false},
		{"http://deb.debian.org/debian-security", "bookworm-security", "http://deb.debian.org/debian-security/dists/bookworm-security", false},
	} {
		if dir, flat := (Source{URL: tc.url, Suite: tc.suite}).layout(); dir != tc.dir || flat != tc.flat {
			t.Errorf("%s %q: %s %v, want %s %v", tc.url, tc.suite, dir, flat, tc.dir, tc.flat)
		}
	}
}
