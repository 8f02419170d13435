package debrepo

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"pault.ag/go/debian/dependency"
	"pault.ag/go/debian/version"
)

// Want is a package a site asks for.
type Want struct {
	Name string
	// Version is "" for the newest version the indexes hold, an exact
	// version ("1.20.0-1", with its epoch when it has one), or a prefix
	// ending in "*" ("1.31.2-*") for the newest version whose text, epoch
	// included, starts with it, as apt's version pins read it.
	Version string
}

// Resolve returns the packages apt needs to install wants on a fresh host
// of arch from indexes alone: the wants, every package of the indexes that
// is Essential or of Priority required, and the closure of their Depends
// and Pre-Depends, sorted by name and version.
//
// The base system is in because the target's is of unknown age: a package
// of the closure may need newer base packages than the host has, and
// packages never declare dependencies on Essential ones, so only a bundle
// holding the indexes' whole base keeps apt's upgrade of it consistent.
//
// Resolve chooses as apt on a fresh host does: for each name the highest
// version every constraint gathered on the name allows; of alternatives
// ("a | b") the first that some package satisfies, unless one is already
// chosen; a virtual name's provider only when no real package of the name
// fits, the provider of highest Priority, then the first by name. When a
// dependency needs another version of a name already chosen, it constrains
// the name and resolves again; a name no version of which meets every
// constraint, and a dependency nothing satisfies, are errors that name the
// chain of packages from what asked for it.
func Resolve(indexes []*Index, arch string, wants []Want) ([]*Package, error) {
	if arch == "" || arch == "all" {
		return nil, fmt.Errorf("resolve for %q: not a host architecture", arch)
	}
	var lists [][]*Package
	for _, idx := range indexes {
		lists = append(lists, idx.Packages)
	}
	r := &resolver{u: newUniverse(arch, lists...), global: map[string][]constraint{}}
	roots, err := r.roots(wants)
	if err != nil {
		return nil, err
	}
	// Each round that does not settle adds a constraint no earlier round
	// had; the bound only stops a bug's loop.
	for range 10000 {
		err := r.round(roots)
		if errors.Is(err, errRestart) {
			continue
		}
		if err != nil {
			return nil, err
		}
		return sorted(slices.Collect(maps.Values(r.sel))), nil
	}
	return nil, errors.New("resolve: the constraints did not settle")
}

// errRestart ends a round whose choices a new constraint invalidated.
var errRestart = errors.New("resolve again")

// item is one dependency to satisfy and the chain of packages that led to
// it, from the want (or the base system) down to the package declaring it.
type item struct {
	rel   dependency.Relation
	chain []string
}

// constraint is a condition on the versions of one name and where it came
// from.
type constraint struct {
	what  string
	ok    func(version.Version) bool
	chain []string
}

func (c constraint) String() string { return c.what + " from " + strings.Join(c.chain, " -> ") }

type resolver struct {
	u      *universe
	global map[string][]constraint // kept across rounds
	sel    map[string]*Package     // this round's choice per name
	via    map[string][]string     // the chain that chose it
}

// roots are the wants, then the base system, as items; exact and prefix
// versions become constraints on their names from the start.
func (r *resolver) roots(wants []Want) ([]item, error) {
	var out []item
	wanted := map[string]bool{}
	for _, w := range wants {
		chain := []string{"want"}
		poss := dependency.Possibility{Name: w.Name}
		switch {
		case w.Name == "" || strings.ContainsAny(w.Name, " ,|()"):
			return nil, fmt.Errorf("want %q: not a package name", w.Name)
		case w.Version == "":
		case len(r.u.byName[w.Name]) == 0:
			return nil, fmt.Errorf("want %s=%s: no index holds a package %s for %s", w.Name, w.Version, w.Name, r.u.arch)
		case strings.HasSuffix(w.Version, "*"):
			prefix := strings.TrimSuffix(w.Version, "*")
			if strings.Contains(prefix, "*") {
				return nil, fmt.Errorf("want %s=%s: only a trailing * is a pattern", w.Name, w.Version)
			}
			r.global[w.Name] = append(r.global[w.Name], constraint{"= " + w.Version,
				func(v version.Version) bool { return strings.HasPrefix(v.String(), prefix) }, chain})
		default:
			want, err := version.Parse(w.Version)
			if err != nil {
				return nil, fmt.Errorf("want %s=%s: %w", w.Name, w.Version, err)
			}
			poss.Version = &dependency.VersionRelation{Operator: "=", Number: w.Version}
			r.global[w.Name] = append(r.global[w.Name], constraint{"(= " + w.Version + ")",
				func(v version.Version) bool { return version.Compare(v, want) == 0 }, chain})
		}
		wanted[w.Name] = true
		out = append(out, item{dependency.Relation{Possibilities: []dependency.Possibility{poss}}, chain})
	}
	for _, name := range slices.Sorted(maps.Keys(r.u.byName)) {
		why := ""
		for _, p := range r.u.byName[name] {
			if p.Essential {
				why = "Essential"
				break
			}
			if p.Priority == "required" {
				why = "Priority: required"
			}
		}
		if why != "" && !wanted[name] {
			out = append(out, item{dependency.Relation{Possibilities: []dependency.Possibility{{Name: name}}}, []string{why}})
		}
	}
	return out, nil
}

// round chooses from scratch, breadth first from roots, under the
// constraints gathered so far.
func (r *resolver) round(roots []item) error {
	r.sel, r.via = map[string]*Package{}, map[string][]string{}
	queue := slices.Clone(roots)
	for i := 0; i < len(queue); i++ {
		next, err := r.need(queue[i])
		if err != nil {
			return err
		}
		queue = append(queue, next...)
	}
	return nil
}

// need satisfies it, returning the dependencies of what it chose.
func (r *resolver) need(it item) ([]item, error) {
	for _, poss := range it.rel.Possibilities {
		if r.chosen(poss) {
			return nil, nil
		}
	}
	for _, poss := range it.rel.Possibilities {
		if p := r.pick(poss); p != nil {
			return r.take(p, it.chain), nil
		}
	}
	for _, poss := range it.rel.Possibilities {
		if cur := r.sel[poss.Name]; cur != nil && poss.Version != nil && !poss.Version.SatisfiedBy(cur.Version) {
			c := relConstraint(poss, it.chain)
			if r.candidate(poss, c) != nil {
				r.global[poss.Name] = append(r.global[poss.Name], c)
				return nil, errRestart
			}
		}
	}
	return nil, r.unmet(it)
}

// relConstraint is poss's version relation as a constraint on its name.
func relConstraint(poss dependency.Possibility, chain []string) constraint {
	rel := *poss.Version
	return constraint{rel.String(), rel.SatisfiedBy, chain} // "(>= 2)"
}

// chosen reports whether this round's choices already satisfy poss.
func (r *resolver) chosen(poss dependency.Possibility) bool {
	if p := r.sel[poss.Name]; p != nil && r.u.real(poss, p) {
		return true
	}
	for _, pv := range r.u.provides[poss.Name] {
		if r.sel[pv.pkg.Name] == pv.pkg && r.u.virtual(poss, pv) {
			return true
		}
	}
	return false
}

// allowed reports whether p meets every constraint on its name.
func (r *resolver) allowed(p *Package, extra ...constraint) bool {
	for _, c := range slices.Concat(r.global[p.Name], extra) {
		if !c.ok(p.Version) {
			return false
		}
	}
	return true
}

// candidate is the newest package named poss.Name that satisfies poss and
// every constraint on the name (and extra).
func (r *resolver) candidate(poss dependency.Possibility, extra ...constraint) *Package {
	for _, p := range r.u.byName[poss.Name] {
		if r.u.real(poss, p) && r.allowed(p, extra...) {
			return p
		}
	}
	return nil
}

// pick is the package to add for poss, nil when none fits: the real
// package when one does, else a provider not yet chosen in another version.
func (r *resolver) pick(poss dependency.Possibility) *Package {
	if r.sel[poss.Name] == nil {
		if p := r.candidate(poss); p != nil {
			return p
		}
	}
	var best *Package
	for _, pv := range r.u.provides[poss.Name] {
		p := pv.pkg
		if r.sel[p.Name] != nil || !r.u.virtual(poss, pv) || !r.allowed(p) {
			continue
		}
		if best == nil || priorityRank(p.Priority) < priorityRank(best.Priority) {
			best = p
		}
	}
	return best
}

// priorityRank orders Priority values, most important first.
func priorityRank(p string) int {
	if i := slices.Index([]string{"required", "important", "standard", "optional", "extra"}, p); i >= 0 {
		return i
	}
	return 5
}

// take chooses p, returning its dependencies.
func (r *resolver) take(p *Package, chain []string) []item {
	r.sel[p.Name], r.via[p.Name] = p, chain
	next := append(slices.Clip(chain), p.Name+"="+p.Version.String())
	var out []item
	for _, rel := range relations(p) {
		out = append(out, item{rel, next})
	}
	return out
}

// unmet explains why nothing satisfies it.
func (r *resolver) unmet(it item) error {
	var why []string
	for _, poss := range it.rel.Possibilities {
		why = append(why, r.explain(poss, it.chain))
	}
	return fmt.Errorf("%s -> %s: %s", strings.Join(it.chain, " -> "), it.rel, strings.Join(why, "; "))
}

func (r *resolver) explain(poss dependency.Possibility, chain []string) string {
	name := poss.Name
	all := r.u.byName[name]
	if len(all) == 0 && len(r.u.provides[name]) == 0 {
		return fmt.Sprintf("no index holds %s for %s", name, r.u.arch)
	}
	var cs []string
	for _, c := range r.global[name] {
		cs = append(cs, c.String())
	}
	if poss.Version != nil {
		// A want's relation is among the global constraints already.
		if c := relConstraint(poss, chain).String(); !slices.Contains(cs, c) {
			cs = append(cs, c)
		}
	}
	if cur := r.sel[name]; cur != nil {
		cs = append(cs, fmt.Sprintf("%s chosen from %s", cur.Version, strings.Join(r.via[name], " -> ")))
	}
	var vs []string
	for _, p := range all {
		vs = append(vs, p.Version.String())
	}
	for _, pv := range r.u.provides[name] {
		vs = append(vs, "provided by "+pv.pkg.Name+"="+pv.pkg.Version.String())
	}
	msg := fmt.Sprintf("no version of %s meets every constraint on it (%s); the indexes hold %s", name, strings.Join(cs, "; "), strings.Join(vs, ", "))
	if poss.Arch != nil {
		msg += " (for " + poss.Arch.String() + ")"
	}
	return msg
}
