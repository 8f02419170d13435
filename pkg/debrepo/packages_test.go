package debrepo

import (
	"strings"
	"testing"
)

func TestParsePackages(t *testing.T) {
	text := `Package: libfoo1
Version: 1:2.0-3
Architecture: amd64
Multi-Arch: same
Priority: optional
Pre-Depends: dpkg (>= 1.17)
Depends: libc6 (>= 2.34), libbar | libbaz (<< 3),
 python3:any
Recommends: foo-doc
Provides: libfoo (= 1:2.0-3), foo-api
Description: a library
 with a long description
 .
 of several lines
Filename: ./libfoo1_2.0-3_amd64.deb
Size: 1234
SHA256: ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef0123456789

Package: base-thing
Essential: yes
Priority: required
Version: 1.0
Architecture: all
Depends: old (< 2), older (> 1)
Filename: pool/main/b/base-thing/base-thing_1.0_all.deb
Size: 5
SHA256: 0000000000000000000000000000000000000000000000000000000000000000
`
	pkgs, err := ParsePackages("http://r.test/x/", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) != 2 {
		t.Fatalf("%d packages", len(pkgs))
	}
	p, q := pkgs[0], pkgs[1]
	for _, c := range []struct{ got, want string }{
		{p.Name, "libfoo1"},
		{p.Version.String(), "1:2.0-3"},
		{p.Architecture, "amd64"},
		{p.MultiArch, "same"},
		{p.Priority, "optional"},
		{p.PreDepends.String(), "dpkg (>= 1.17)"},
		{p.Depends.String(), "libc6 (>= 2.34), libbar | libbaz (<< 3), python3:any"},
		{p.Provides[0].Name + "=" + p.Provides[0].Version.String(), "libfoo=1:2.0-3"},
		{p.Provides[1].Name, "foo-api"},
		{p.SHA256, "abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789"},
		{p.URL(), "http://r.test/x/libfoo1_2.0-3_amd64.deb"},
		{p.DebName(), "libfoo1_2.0-3_amd64.deb"},
		{q.URL(), "http://r.test/x/pool/main/b/base-thing/base-thing_1.0_all.deb"},
		// the operators of old, which dpkg reads as <= and >=
		{q.Depends.String(), "old (<= 2), older (>= 1)"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
	if p.Provides[1].Version != nil || p.Size != 1234 || p.Essential || !q.Essential || q.Priority != "required" {
		t.Errorf("%+v %+v", p, q)
	}
	if !strings.Contains(p.stanza, " of several lines") || !strings.HasPrefix(p.stanza, "Package: libfoo1\n") || strings.HasSuffix(p.stanza, "\n") {
		t.Errorf("stanza %q", p.stanza)
	}
}

func TestParsePackagesRefuses(t *testing.T) {
	const ok = "Package: a\nVersion: 1\nArchitecture: amd64\nFilename: a.deb\nSize: 1\nSHA256: " +
		"0000000000000000000000000000000000000000000000000000000000000000\n"
	for _, tc := range []struct{ name, text, err string }{
		{"no version", strings.Replace(ok, "Version: 1\n", "", 1), "package a: Version"},
		{"no filename", strings.Replace(ok, "Filename: a.deb\n", "", 1), "package a: Filename"},
		{"bad size", strings.Replace(ok, "Size: 1", "Size: x", 1), "package a: Size"},
		{"short sha256", strings.Replace(ok, "SHA256: 00", "SHA256: ", 1), "package a: SHA256"},
		{"bad depends", ok + "Depends: b (>= 1\n", "package a: Depends"},
		{"versioned provide other than =", ok + "Provides: b (>= 1)\n", "package a: Provides"},
		{"not a field", ok + "garbage\n", "line 7"},
		{"continuation first", " x\n" + ok, "line 1: a continuation line"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParsePackages(testBase, []byte(tc.text))
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("error %v, want one containing %q", err, tc.err)
			}
		})
	}
}
