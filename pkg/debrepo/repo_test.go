package debrepo

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
)

// upstream is the index testRepo's packages come from.
const upstream = `Package: hello
Version: 1.0-1
Architecture: amd64
Depends: libhello (>= 1)
Description: greets
 at length
MD5sum: 00000000000000000000000000000000

Package: libhello
Version: 1.2-1
Architecture: all
Multi-Arch: foreign
Description: the greeting library
`

// testRepo makes a flat repository of upstream's packages (their .debs
// stand-ins) signed by a new key, and serves it.
func testRepo(t *testing.T) (dir string, key *openpgp.Entity, pkgs []*Package, srv *httptest.Server) {
	t.Helper()
	dir = t.TempDir()
	var text strings.Builder
	for _, para := range strings.Split(strings.TrimSpace(upstream), "\n\n") {
		name := strings.Fields(para)[1]
		deb := []byte("the .deb of " + name)
		fmt.Fprintf(&text, "%s\nFilename: pool/main/%s.deb\nSize: %d\nSHA256: %x\n\n", para, name, len(deb), sha256.Sum256(deb))
		if err := os.WriteFile(filepath.Join(dir, name+".deb"), deb, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	pkgs, err := ParsePackages("http://upstream.test/debian", []byte(text.String()))
	if err != nil {
		t.Fatal(err)
	}
	key = newKey(t)
	if err := WriteFlat(dir, pkgs, key, "gpukit test"); err != nil {
		t.Fatal(err)
	}
	srv = httptest.NewServer(http.FileServer(http.Dir(dir)))
	t.Cleanup(srv.Close)
	return dir, key, pkgs, srv
}

func newKey(t *testing.T) *openpgp.Entity {
	t.Helper()
	key, err := NewSigningKey("gpukit test bundle")
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func publicKey(t *testing.T, keys ...*openpgp.Entity) []byte {
	t.Helper()
	var out []byte
	for _, k := range keys {
		b, err := ArmoredPublicKey(k)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b...)
	}
	return out
}

// spaced writes a fingerprint as people paste it: lower case, in groups.
func spaced(fp string) string {
	var groups []string
	for i := 0; i < len(fp); i += 4 {
		groups = append(groups, strings.ToLower(fp[i:i+4]))
	}
	return strings.Join(groups, " ")
}

func TestFlatRoundTrip(t *testing.T) {
	dir, key, pkgs, srv := testRepo(t)
	get := HTTPGetter(srv.Client())
	for _, suite := range []string{"./", "/", ""} {
		idx, err := Read(context.Background(), get, Source{URL: srv.URL + "/", Suite: suite, Arch: "amd64",
			Keyring: publicKey(t, key), Fingerprints: []string{spaced(Fingerprint(key))}})
		if err != nil {
			t.Fatalf("suite %q: %v", suite, err)
		}
		if idx.Signer != Fingerprint(key) || names(idx.Packages) != names(pkgs) {
			t.Fatalf("suite %q: signer %s, packages %s", suite, idx.Signer, names(idx.Packages))
		}
		for i, p := range idx.Packages {
			if p.URL() != srv.URL+"/"+pkgs[i].DebName() || p.SHA256 != pkgs[i].SHA256 || p.Size != pkgs[i].Size {
				t.Errorf("%s at %s, %d bytes of %s", p, p.URL(), p.Size, p.SHA256)
			}
		}
		got, err := Resolve([]*Index{idx}, "amd64", []Want{{Name: "hello"}})
		if err != nil || names(got) != "hello=1.0-1 libhello=1.2-1" {
			t.Fatalf("resolved %s, %v", names(got), err)
		}
		out := t.TempDir()
		for _, p := range got {
			if err := Download(context.Background(), get, p, filepath.Join(out, p.DebName())); err != nil {
				t.Fatal(err)
			}
		}
	}
	b, _ := os.ReadFile(filepath.Join(dir, "Packages"))
	for _, s := range []string{"Description: greets\n at length\n", "Multi-Arch: foreign\n", "Filename: ./hello.deb\n"} {
		if !bytes.Contains(b, []byte(s)) {
			t.Errorf("Packages lacks %q:\n%s", s, b)
		}
	}
	if bytes.Contains(b, []byte("MD5sum")) || bytes.Contains(b, []byte("pool/")) {
		t.Errorf("Packages keeps the upstream file's fields:\n%s", b)
	}
	release, _ := os.ReadFile(filepath.Join(dir, "Release"))
	if !bytes.Contains(release, []byte("Architectures: amd64\n")) || bytes.Contains(release, []byte("Valid-Until")) {
		t.Errorf("Release:\n%s", release)
	}
}

// serveCopy serves a copy of dir after change alters it.
func serveCopy(t *testing.T, dir string, change func(dir string)) *httptest.Server {
	t.Helper()
	cp := t.TempDir()
	if err := os.CopyFS(cp, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	change(cp)
	srv := httptest.NewServer(http.FileServer(http.Dir(cp)))
	t.Cleanup(srv.Close)
	return srv
}

func edit(t *testing.T, path, old, new string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil || !bytes.Contains(b, []byte(old)) {
		t.Fatalf("%s lacks %q: %v", path, old, err)
	}
	if err := os.WriteFile(path, bytes.Replace(b, []byte(old), []byte(new), 1), 0o644); err != nil {
		t.Fatal(err)
	}
}

func gzipped(t *testing.T, b []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(b)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// resign re-signs dir's Release file after change alters its text.
func resign(t *testing.T, dir string, key *openpgp.Entity, change func(string) string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "Release"))
	if err != nil {
		t.Fatal(err)
	}
	text := []byte(change(string(b)))
	in, det, err := sign(text, key)
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{"Release": text, "InRelease": in, "Release.gpg": det} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestReadRefuses(t *testing.T) {
	dir, key, _, _ := testRepo(t)
	other := newKey(t)
	fp, otherFP := Fingerprint(key), Fingerprint(other)
	past := time.Now().Add(-time.Hour).UTC().Format(time.RFC1123)
	for _, tc := range []struct {
		name    string
		change  func(dir string)
		source  func(s *Source)
		err     []string // with {URL} for the server's
		success bool
	}{{
		name: "a tampered Packages.gz",
		change: func(d string) {
			b, _ := os.ReadFile(filepath.Join(d, "Packages"))
			os.WriteFile(filepath.Join(d, "Packages.gz"), gzipped(t, bytes.Replace(b, []byte("1.0-1"), []byte("9.0-1"), 1)), 0o644)
		},
		err: []string{"{URL}/Packages.gz: ", "the Release file says"},
	}, {
		name: "a tampered Packages",
		change: func(d string) {
			os.Remove(filepath.Join(d, "Packages.gz"))
			edit(t, filepath.Join(d, "Packages"), "greets", "pwns")
		},
		err: []string{"{URL}/Packages: ", "SHA256"},
	}, {
		name:   "a tampered InRelease",
		change: func(d string) { edit(t, filepath.Join(d, "InRelease"), "Origin: gpukit test", "Origin: gpukit evil") },
		err:    []string{"{URL}/InRelease: signature: "},
	}, {
		name: "text before the signed message",
		change: func(d string) {
			edit(t, filepath.Join(d, "InRelease"), "-----BEGIN PGP SIGNED", "Origin: x\n-----BEGIN PGP SIGNED")
		},
		err: []string{"{URL}/InRelease: not a clearsigned message"},
	}, {
		name:   "a key whose fingerprint is not pinned",
		source: func(s *Source) { s.Keyring, s.Fingerprints = publicKey(t, key, other), []string{otherFP} },
		err:    []string{"{URL}/InRelease: signed by key " + fp + ", which is not pinned (pinned: " + otherFP + ")"},
	}, {
		name:   "a key not in the keyring",
		source: func(s *Source) { s.Keyring, s.Fingerprints = publicKey(t, other), []string{otherFP} },
		err:    []string{"{URL}/InRelease: signed by key " + fp + ", not a key of the keyring"},
	}, {
		name:   "a pinned key not in the keyring",
		source: func(s *Source) { s.Fingerprints = []string{otherFP} },
		err:    []string{"{URL}: the keyring holds none of the pinned keys " + otherFP},
	}, {
		name:   "a fingerprint too short",
		source: func(s *Source) { s.Fingerprints = []string{fp[:39]} },
		err:    []string{"not 40 hex digits"},
	}, {
		name:   "an expired Release file",
		change: func(d string) { resign(t, d, key, func(s string) string { return s + "Valid-Until: " + past + "\n" }) },
		err:    []string{"{URL}/InRelease: expired: valid until " + past},
	}, {
		name: "a Release file valid for a day more",
		change: func(d string) {
			resign(t, d, key, func(s string) string {
				return s + "Valid-Until: " + time.Now().Add(24*time.Hour).UTC().Format(time.RFC1123) + "\n"
			})
		},
		success: true,
	}, {
		name:    "no InRelease: Release and Release.gpg",
		change:  func(d string) { os.Remove(filepath.Join(d, "InRelease")) },
		success: true,
	}, {
		name: "no InRelease, a tampered Release",
		change: func(d string) {
			os.Remove(filepath.Join(d, "InRelease"))
			edit(t, filepath.Join(d, "Release"), "Origin: gpukit test", "Origin: gpukit evil")
		},
		err: []string{"{URL}/Release: signature: "},
	}, {
		name:   "no InRelease, no Release",
		change: func(d string) { os.Remove(filepath.Join(d, "InRelease")); os.Remove(filepath.Join(d, "Release")) },
		err:    []string{"{URL}/InRelease: HTTP 404 Not Found", "{URL}/Release: HTTP 404 Not Found"},
	}, {
		name:   "no Packages index",
		change: func(d string) { os.Remove(filepath.Join(d, "Packages")); os.Remove(filepath.Join(d, "Packages.gz")) },
		err:    []string{"{URL}/Packages.gz: HTTP 404", "{URL}/Packages: HTTP 404"},
	}, {
		name:   "components in a flat repository",
		source: func(s *Source) { s.Components = []string{"main"} },
		err:    []string{"{URL}: a flat repository has no components"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			srv := serveCopy(t, dir, func(d string) {
				if tc.change != nil {
					tc.change(d)
				}
			})
			src := Source{URL: srv.URL, Suite: "./", Arch: "amd64", Keyring: publicKey(t, key), Fingerprints: []string{fp}}
			if tc.source != nil {
				tc.source(&src)
			}
			idx, err := Read(context.Background(), HTTPGetter(srv.Client()), src)
			if tc.success {
				if err != nil || len(idx.Packages) != 2 {
					t.Fatalf("%v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("read")
			}
			for _, s := range tc.err {
				if s = strings.ReplaceAll(s, "{URL}", srv.URL); !strings.Contains(err.Error(), s) {
					t.Errorf("error %q lacks %q", err, s)
				}
			}
		})
	}
}
