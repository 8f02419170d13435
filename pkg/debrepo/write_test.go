package debrepo

import (
	"bytes"
	"io"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
)

func TestWriteFlatRefuses(t *testing.T) {
	dir, key, pkgs, _ := testRepo(t)
	twin := *pkgs[0]
	twin.Name = "hello2"
	for _, tc := range []struct {
		name   string
		change func(dir string)
		pkgs   []*Package
		key    *openpgp.Entity
		origin string
		err    string
	}{
		{name: "a missing .deb", change: func(d string) { os.Remove(filepath.Join(d, "hello.deb")) }, err: "hello=1.0-1 (amd64): open "},
		{name: "an altered .deb", change: func(d string) { os.WriteFile(filepath.Join(d, "libhello.deb"), []byte("x"), 0o644) },
			err: "libhello=1.2-1 (all): " + "{DIR}/libhello.deb is 1 bytes of SHA256 2d711642"},
		{name: "one file for two packages", pkgs: []*Package{pkgs[0], &twin}, err: "both are hello.deb"},
		{name: "no private key", key: &openpgp.Entity{PrimaryKey: key.PrimaryKey}, err: "no usable private key"},
		{name: "an origin of two lines", origin: "a\nb", err: `origin "a\nb": not one line`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := t.TempDir()
			os.CopyFS(d, os.DirFS(dir))
			if tc.change != nil {
				tc.change(d)
			}
			p, k, o := pkgs, key, "gpukit"
			if tc.pkgs != nil {
				p = tc.pkgs
			}
			if tc.key != nil {
				k = tc.key
			}
			if tc.origin != "" {
				o = tc.origin
			}
			err := WriteFlat(d, p, k, o)
			if want := strings.ReplaceAll(tc.err, "{DIR}", d); err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("error %v, want %q", err, want)
			}
		})
	}
}

// TestSynthesizedStanza writes a package made by hand, not read from an
// index, with the fields apt needs.
func TestSynthesizedStanza(t *testing.T) {
	idx := index(t, "Package: a\nVersion: 1:2-3\nMulti-Arch: foreign\nEssential: yes\nPriority: required\n"+
		"Pre-Depends: dpkg (>= 1.17)\nDepends: b (>= 1) | c, d:any\nProvides: e (= 2), f")
	p := *idx.Packages[0]
	p.stanza = ""
	got := stanza(&p, "./"+p.DebName())
	want := "Package: a\nVersion: 1:2-3\nArchitecture: amd64\nMulti-Arch: foreign\nEssential: yes\nPriority: required\n" +
		"Pre-Depends: dpkg (>= 1.17)\nDepends: b (>= 1) | c, d:any\nProvides: e (= 2), f\n" +
		"Filename: ./a_1:2-3_amd64.deb\nSize: 1\nSHA256: " + strings.Repeat("0", 64) + "\n"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestSigningKey(t *testing.T) {
	key := newKey(t)
	if key.PrimaryKey.PubKeyAlgo != packet.PubKeyAlgoEdDSA || key.PrimaryKey.Version != 4 {
		t.Errorf("a v%d key of algorithm %d, not v4 EdDSA", key.PrimaryKey.Version, key.PrimaryKey.PubKeyAlgo)
	}
	fp := Fingerprint(key)
	if len(fp) != 40 || strings.ToUpper(fp) != fp {
		t.Errorf("fingerprint %q", fp)
	}
	private, err := ArmoredPrivateKey(key)
	if err != nil || !strings.HasPrefix(string(private), "-----BEGIN PGP PRIVATE KEY BLOCK-----") {
		t.Fatalf("%v\n%s", err, private)
	}
	again, err := ReadSigningKey(private)
	if err != nil || Fingerprint(again) != fp {
		t.Fatalf("read back: %v", err)
	}
	// The key read back signs what the first key's public half verifies.
	in, _, err := sign([]byte("Origin: x\n"), again)
	if err != nil {
		t.Fatal(err)
	}
	signed, _, sig, err := clearsigned(in)
	if err != nil {
		t.Fatal(err)
	}
	v, err := newVerifier(publicKey(t, key), []string{fp})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := v.check(signed, func() io.Reader { return bytes.NewReader(sig) }); err != nil || got != fp {
		t.Errorf("verified by %s: %v", got, err)
	}
	for _, bad := range []string{"", "x", string(publicKey(t, key)), string(private) + string(private)} {
		if _, err := ReadSigningKey([]byte(bad)); err == nil {
			t.Errorf("%q read as a signing key", bad)
		}
	}
	if _, err := NewSigningKey("a <b>"); err == nil {
		t.Error("a name with an address")
	}
}

// Writing the same packages again changes no file: a bundle's second run
// leaves its repositories as they were. Other packages, or another key,
// re-sign.
func TestWriteUnchanged(t *testing.T) {
	dir, key, pkgs, _ := testRepo(t)
	read := func() map[string]string {
		out := map[string]string{}
		for _, f := range []string{"Packages", "Release", "InRelease", "Release.gpg"} {
			b, err := os.ReadFile(filepath.Join(dir, f))
			if err != nil {
				t.Fatal(err)
			}
			out[f] = string(b)
		}
		return out
	}
	before := read()
	time.Sleep(1100 * time.Millisecond) // Release's Date has seconds
	if err := WriteFlat(dir, pkgs, key, "gpukit"); err != nil {
		t.Fatal(err)
	}
	if after := read(); !maps.Equal(before, after) {
		t.Error("the same packages written again changed the repository")
	}
	if err := WriteFlat(dir, pkgs[:1], key, "gpukit"); err != nil {
		t.Fatal(err)
	}
	if after := read(); after["InRelease"] == before["InRelease"] {
		t.Error("other packages, and the Release file was not signed again")
	}
	if err := WriteFlat(dir, pkgs[:1], newKey(t), "gpukit"); err != nil {
		t.Fatal(err)
	}
	if after := read(); !strings.Contains(after["InRelease"], "BEGIN PGP SIGNATURE") || after["Release.gpg"] == before["Release.gpg"] {
		t.Error("another key, and the repository was not signed again")
	}
}
