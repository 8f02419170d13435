package debrepo

import (
	"encoding/hex"
	"fmt"
	"path"
	"regexp"
	"strconv"
	"strings"

	"pault.ag/go/debian/dependency"
	"pault.ag/go/debian/version"
)

// Package is one binary package of a Packages index.
type Package struct {
	Name         string
	Version      version.Version
	Architecture string // a Debian architecture, or "all"
	MultiArch    string // "", "same", "foreign" or "allowed"
	Essential    bool
	Priority     string
	Depends      dependency.Dependency
	PreDepends   dependency.Dependency
	Provides     []Provide
	Filename     string // relative to Base
	Size         int64
	SHA256       string // lower-case hex
	// Base is the URL of the repository the index came from (its Source's
	// URL, which Filename is relative to, in both layouts).
	Base string

	stanza string // the index's paragraph, re-emitted by WriteFlat
}

// Provide is one name a package provides. A versioned provide ("foo (=
// 1.2)") satisfies versioned dependencies on foo; an unversioned one only
// unversioned dependencies, as in apt and dpkg.
type Provide struct {
	Name    string
	Version *version.Version // nil when unversioned
}

// URL is where the package's .deb is.
func (p *Package) URL() string {
	return strings.TrimRight(p.Base, "/") + "/" + strings.TrimPrefix(p.Filename, "./")
}

// DebName is the .deb's file name (the last element of Filename): where
// WriteFlat expects it in the repository's directory.
func (p *Package) DebName() string { return path.Base(p.Filename) }

func (p *Package) String() string {
	return p.Name + "=" + p.Version.String() + " (" + p.Architecture + ")"
}

// packageFields are the fields ParsePackages reads; the rest of a stanza is
// kept as text only.
var packageFields = map[string]bool{
	"package": true, "version": true, "architecture": true, "multi-arch": true,
	"essential": true, "priority": true, "depends": true, "pre-depends": true,
	"provides": true, "filename": true, "size": true, "sha256": true,
}

// ParsePackages reads a Packages index (uncompressed) whose Filenames are
// relative to base. Every stanza must have a name, a version, an
// architecture, a Filename, a Size and a SHA256: an index that cannot say
// how to fetch and check a package is refused whole, not in part.
func ParsePackages(base string, text []byte) ([]*Package, error) {
	paras, err := paragraphs(string(text), packageFields)
	if err != nil {
		return nil, err
	}
	out := make([]*Package, 0, len(paras))
	for _, para := range paras {
		p, err := parsePackage(para)
		if err != nil {
			name := para.get("package")
			if name == "" {
				name = truncate(para.raw)
			}
			return nil, fmt.Errorf("package %s: %w", name, err)
		}
		p.Base = base
		out = append(out, p)
	}
	return out, nil
}

func parsePackage(para paragraph) (*Package, error) {
	p := &Package{
		Name:         para.get("package"),
		Architecture: para.get("architecture"),
		MultiArch:    para.get("multi-arch"),
		Essential:    para.get("essential") == "yes",
		Priority:     para.get("priority"),
		Filename:     para.get("filename"),
		SHA256:       strings.ToLower(para.get("sha256")),
		stanza:       para.raw,
	}
	for _, f := range [][2]string{{"Package", p.Name}, {"Architecture", p.Architecture}, {"Filename", p.Filename}} {
		if f[1] == "" || strings.ContainsAny(f[1], " \t\n") {
			return nil, fmt.Errorf("%s %q: missing or not one word", f[0], f[1])
		}
	}
	var err error
	if p.Version, err = version.Parse(para.get("version")); err != nil {
		return nil, fmt.Errorf("Version %q: %w", para.get("version"), err)
	}
	if p.Size, err = strconv.ParseInt(para.get("size"), 10, 64); err != nil || p.Size < 0 {
		return nil, fmt.Errorf("Size %q: not a size", para.get("size"))
	}
	if b, err := hex.DecodeString(p.SHA256); err != nil || len(b) != 32 {
		return nil, fmt.Errorf("SHA256 %q: not a SHA256 digest", p.SHA256)
	}
	if name := p.DebName(); name == "." || name == ".." || name == "/" || strings.Contains(p.Filename, "\\") {
		return nil, fmt.Errorf("Filename %q: no file name", p.Filename)
	}
	if p.Depends, err = parseRelations(para.get("depends")); err != nil {
		return nil, fmt.Errorf("Depends: %w", err)
	}
	if p.PreDepends, err = parseRelations(para.get("pre-depends")); err != nil {
		return nil, fmt.Errorf("Pre-Depends: %w", err)
	}
	if p.Provides, err = parseProvides(para.get("provides")); err != nil {
		return nil, fmt.Errorf("Provides: %w", err)
	}
	return p, nil
}

// oldRelation matches the pre-2003 operators "<" and ">", which dpkg still
// reads as "<=" and ">=" and pault.ag/go/debian refuses.
var oldRelation = regexp.MustCompile(`\(\s*([<>])\s*([^<>=\s])`)

// parseRelations parses a Depends-style field, newlines and all.
func parseRelations(s string) (dependency.Dependency, error) {
	if s == "" {
		return dependency.Dependency{}, nil
	}
	s = strings.Join(strings.Fields(s), " ")
	s = oldRelation.ReplaceAllString(s, "($1= $2")
	d, err := dependency.Parse(s)
	if err != nil {
		return dependency.Dependency{}, fmt.Errorf("%q: %w", truncate(s), err)
	}
	for _, r := range d.Relations {
		for _, poss := range r.Possibilities {
			if poss.Substvar {
				return dependency.Dependency{}, fmt.Errorf("%q: an unexpanded substitution variable", truncate(s))
			}
			if poss.Version != nil {
				if _, err := version.Parse(poss.Version.Number); err != nil {
					return dependency.Dependency{}, fmt.Errorf("%s: %w", poss, err)
				}
			}
		}
	}
	return *d, nil
}

func parseProvides(s string) ([]Provide, error) {
	d, err := parseRelations(s)
	if err != nil {
		return nil, err
	}
	var out []Provide
	for _, r := range d.Relations {
		if len(r.Possibilities) != 1 {
			return nil, fmt.Errorf("%s: alternatives in Provides", r)
		}
		poss := r.Possibilities[0]
		pr := Provide{Name: poss.Name}
		if poss.Version != nil {
			if poss.Version.Operator != "=" {
				return nil, fmt.Errorf("%s: a provide's version takes =", poss)
			}
			v, _ := version.Parse(poss.Version.Number) // parseRelations checked it
			pr.Version = &v
		}
		out = append(out, pr)
	}
	return out, nil
}
