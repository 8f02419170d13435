package debrepo

import (
	"fmt"
	"strings"
	"testing"
)

// testBase is the repository URL of the indexes tests write by hand.
const testBase = "http://repo.test/debian"

// index parses stanzas written without the fields that say where a file
// is, adding them: tests of resolution care about names and relations.
func index(t *testing.T, text string) *Index {
	t.Helper()
	var b strings.Builder
	for _, para := range strings.Split(strings.TrimSpace(text), "\n\n") {
		para = strings.TrimSpace(para)
		fields, _ := paragraphs(para, nil)
		f := fields[0].fields
		fmt.Fprintf(&b, "%s\n", para)
		if f["filename"] == "" {
			arch := f["architecture"]
			if arch == "" {
				arch = "amd64"
				b.WriteString("Architecture: amd64\n")
			}
			fmt.Fprintf(&b, "Filename: pool/%s_%s_%s.deb\n", f["package"], f["version"], arch)
		}
		if f["size"] == "" {
			fmt.Fprintf(&b, "Size: 1\nSHA256: %s\n", strings.Repeat("0", 64))
		}
		b.WriteString("\n")
	}
	pkgs, err := ParsePackages(testBase, []byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	return &Index{URL: testBase, Packages: pkgs}
}

// names is pkgs as "name=version" words, in order.
func names(pkgs []*Package) string {
	var out []string
	for _, p := range pkgs {
		out = append(out, p.Name+"="+p.Version.String())
	}
	return strings.Join(out, " ")
}
