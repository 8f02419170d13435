package debrepo

import (
	"errors"
	"fmt"
	"slices"

	"pault.ag/go/debian/dependency"
)

// Check reports whether pkgs is a closure apt can install from on arch:
// each package of arch or all, each name once, and every Depends and
// Pre-Depends of each satisfied by a package of pkgs. Its error lists every
// dependency nothing satisfies.
func Check(pkgs []*Package, arch string) error {
	u := newUniverse(arch, pkgs)
	var errs []error
	seen := map[string]*Package{}
	for _, p := range sorted(pkgs) {
		if p.Architecture != arch && p.Architecture != "all" {
			errs = append(errs, fmt.Errorf("%s: not of %s", p, arch))
		}
		if q := seen[p.Name]; q != nil {
			errs = append(errs, fmt.Errorf("%s: %s too", p, q))
		}
		seen[p.Name] = p
		for _, rel := range relations(p) {
			if !slices.ContainsFunc(rel.Possibilities, func(poss dependency.Possibility) bool { return u.satisfier(poss) != nil }) {
				errs = append(errs, fmt.Errorf("%s: %s: nothing here satisfies it", p, rel))
			}
		}
	}
	return errors.Join(errs...)
}
