package debrepo

import (
	"cmp"
	"slices"
	"strings"

	"pault.ag/go/debian/dependency"
	"pault.ag/go/debian/version"
)

// universe is what can satisfy a dependency on one architecture: the
// packages of that architecture or "all" (apt installs those as the host's
// own), by name, newest first, and by the names they provide. Packages of
// other architectures are left out: a bundle serves hosts of one
// architecture, without foreign ones added to dpkg.
type universe struct {
	arch     string
	byName   map[string][]*Package
	provides map[string][]provider
}

// provider is a package providing a name, in the version it provides
// (nil: unversioned).
type provider struct {
	pkg     *Package
	version *version.Version
}

// newUniverse gathers the packages of lists, the first list's package
// winning when two hold one name and version (a mirror and its origin, or a
// repository listed twice).
func newUniverse(arch string, lists ...[]*Package) *universe {
	u := &universe{arch: arch, byName: map[string][]*Package{}, provides: map[string][]provider{}}
	seen := map[string]bool{}
	for _, l := range lists {
		for _, p := range l {
			if p.Architecture != arch && p.Architecture != "all" {
				continue
			}
			if k := p.Name + "=" + p.Version.String(); seen[k] {
				continue
			} else {
				seen[k] = true
			}
			u.byName[p.Name] = append(u.byName[p.Name], p)
			for _, pr := range p.Provides {
				u.provides[pr.Name] = append(u.provides[pr.Name], provider{p, pr.Version})
			}
		}
	}
	for _, c := range u.byName {
		slices.SortStableFunc(c, func(a, b *Package) int { return version.Compare(b.Version, a.Version) })
	}
	for _, c := range u.provides {
		slices.SortStableFunc(c, func(a, b provider) int {
			return cmp.Or(strings.Compare(a.pkg.Name, b.pkg.Name), version.Compare(b.pkg.Version, a.pkg.Version))
		})
	}
	return u
}

// archOK reports whether p, of the universe's architecture or all, meets
// poss's architecture qualifier: none and ":native" take the host's
// packages, ":any" those Multi-Arch allows to satisfy any architecture's
// dependency, an architecture by name only the host's own.
func (u *universe) archOK(poss dependency.Possibility, p *Package) bool {
	if poss.Arch == nil {
		return true
	}
	switch q := poss.Arch.String(); q {
	case "native", u.arch:
		return true
	case "any":
		return p.MultiArch == "allowed" || p.MultiArch == "foreign"
	default:
		return false
	}
}

// real reports whether p, a package named poss.Name, satisfies poss.
func (u *universe) real(poss dependency.Possibility, p *Package) bool {
	return u.archOK(poss, p) && (poss.Version == nil || poss.Version.SatisfiedBy(p.Version))
}

// virtual reports whether pv, a provider of poss.Name, satisfies poss: a
// versioned dependency takes a versioned provide only.
func (u *universe) virtual(poss dependency.Possibility, pv provider) bool {
	if !u.archOK(poss, pv.pkg) {
		return false
	}
	return poss.Version == nil || pv.version != nil && poss.Version.SatisfiedBy(*pv.version)
}

// relations are the dependencies of p that must hold before apt configures
// it: Pre-Depends and Depends. Recommends and Suggests are not: gpukit
// installs with --no-install-recommends.
func relations(p *Package) []dependency.Relation {
	return slices.Concat(p.PreDepends.Relations, p.Depends.Relations)
}

// satisfier is a package of u that satisfies poss, the real package before
// a provider; nil when none does.
func (u *universe) satisfier(poss dependency.Possibility) *Package {
	for _, p := range u.byName[poss.Name] {
		if u.real(poss, p) {
			return p
		}
	}
	for _, pv := range u.provides[poss.Name] {
		if u.virtual(poss, pv) {
			return pv.pkg
		}
	}
	return nil
}

// sorted is a copy of pkgs in the order Resolve returns: by name, then
// version.
func sorted(pkgs []*Package) []*Package {
	out := slices.Clone(pkgs)
	slices.SortStableFunc(out, func(a, b *Package) int {
		return cmp.Or(strings.Compare(a.Name, b.Name), version.Compare(a.Version, b.Version))
	})
	return out
}
