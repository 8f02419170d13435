package bundle

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"pault.ag/go/debian/version"

	"github.com/gpukit/gpukit/manifests"
	"github.com/gpukit/gpukit/pkg/bundlefs"
	"github.com/gpukit/gpukit/pkg/debrepo"
	"github.com/gpukit/gpukit/pkg/osfamily"
)

// Origin is what the bundle's package repositories call themselves.
const Origin = "gpukit bundle"

// repoOut is one package repository of the bundle: where it lies and how
// (flat, or one suite and component of a dists layout) and what it holds.
type repoOut struct {
	rel              string // below the bundle, slash-separated, ending in "/"
	suite, component string // "" for a flat repository
	arch             string
	pkgs             map[string]*debrepo.Package // by .deb name
}

// packages resolves, for each OS family and architecture of the list,
// the dependency closure of its packages on a fresh host against the
// repositories they come from (the distribution's archives, and the
// repositories gpukit adds, each verified against its pinned keys), fetches
// every .deb by its index's sha256 and writes the bundle's repositories,
// signed by the bundle's key. A package lands in the repository of the
// source it came from, laid out as that source's mirror must be (so that
// spec.mirrors.nvidia, .kubernetes and .docker can name the bundle); what
// comes from the distribution, in packages/os/FAMILY/.
func (c *creator) packages(ctx context.Context) error {
	get, stream := c.o.Get, c.o.Stream
	if get == nil {
		get = debrepo.HTTPGetter(http.DefaultClient)
	}
	if stream == nil {
		stream = debrepo.HTTPStreamer(http.DefaultClient)
	}
	type group struct{ family, arch string }
	var groups []group
	byGroup := map[group][]Artifact{}
	for _, a := range c.list.known(Package) {
		g := group{a.Family, a.Arch}
		if _, ok := byGroup[g]; !ok {
			groups = append(groups, g)
		}
		byGroup[g] = append(byGroup[g], a)
	}
	outs := map[string]*repoOut{}
	for _, g := range groups {
		if err := c.familyPackages(ctx, get, stream, g.family, g.arch, byGroup[g], outs); err != nil {
			return err
		}
	}
	for _, rel := range slices.Sorted(maps.Keys(outs)) {
		o := outs[rel]
		dir := filepath.Join(c.dir, filepath.FromSlash(o.rel))
		var pkgs []*debrepo.Package
		for _, n := range slices.Sorted(maps.Keys(o.pkgs)) {
			pkgs = append(pkgs, o.pkgs[n])
		}
		var err error
		if o.suite == "" {
			err = debrepo.WriteFlat(dir, pkgs, c.key, Origin)
		} else {
			err = debrepo.WriteDists(dir, o.suite, o.component, o.arch, pkgs, c.key, Origin)
		}
		if err != nil {
			return fmt.Errorf("packages: %s: %w", o.rel, err)
		}
	}
	return nil
}

// familyPackages resolves and fetches the packages of one family and
// architecture into outs.
func (c *creator) familyPackages(ctx context.Context, get debrepo.Getter, stream debrepo.Streamer, family, arch string, arts []Artifact, outs map[string]*repoOut) error {
	missAll := func(why string) {
		for _, a := range arts {
			c.miss("package %s (%s): %s", a.Name, family, why)
		}
	}
	fam, ok := familyInfo(family)
	if !ok || fam.PackageManager != osfamily.Apt {
		missAll("bundles hold apt repositories only: RPM repositories (dnf) are not bundled yet")
		return nil
	}
	dist, ok := manifests.Bill().Distribution(family)
	if !ok {
		missAll("the bill of materials names no archive of " + family)
		return nil
	}
	var (
		indexes []*debrepo.Index
		outOf   = map[string]*repoOut{} // by the package's base URL
	)
	out := func(rel, suite, component string) *repoOut {
		o := outs[rel]
		if o == nil {
			o = &repoOut{rel: rel, suite: suite, component: component, arch: arch, pkgs: map[string]*debrepo.Package{}}
			outs[rel] = o
		}
		return o
	}
	// The distribution's archives: every component the packages need.
	keyring, err := os.ReadFile(cmp.Or(c.o.Keyrings[family], dist.Keyring))
	if err != nil {
		missAll(fmt.Sprintf("the keyring of %s's archives: %v (give it with --keyring %s=FILE)", family, err, family))
		return nil
	}
	components := slices.Clone(dist.Components)
	for _, a := range arts {
		if a.Repo != nil && a.Repo.URL == "" {
			for _, comp := range a.Repo.Components {
				if !slices.Contains(components, comp) {
					components = append(components, comp)
				}
			}
		}
	}
	osOut := out(bundlefs.PackagesDir+"/os/"+family+"/", "", "")
	fprs := dist.Fingerprints
	if f := c.o.OSFingerprints[family]; len(f) > 0 {
		fprs = f
	}
	for i, ar := range dist.Archives {
		url := ar.URL
		if m := c.o.OSMirrors[family]; i < len(m) && m[i] != "" {
			url = m[i]
		}
		for _, suite := range ar.Suites {
			idx, err := debrepo.Read(ctx, get, debrepo.Source{URL: url, Suite: suite, Components: components, Arch: arch, Keyring: keyring, Fingerprints: fprs})
			if err != nil {
				missAll(err.Error())
				return nil
			}
			indexes = append(indexes, idx)
			outOf[strings.TrimSuffix(url, "/")] = osOut
		}
	}
	// The repositories gpukit adds, each once.
	seen := map[string]bool{}
	for _, a := range arts {
		r := a.Repo
		if r == nil || r.URL == "" {
			continue
		}
		id := r.URL + " " + r.Suite + " " + strings.Join(r.Components, " ")
		if seen[id] {
			continue
		}
		seen[id] = true
		key, err := get(ctx, r.KeyURL, 1<<20)
		if err != nil {
			missAll(fmt.Sprintf("the signing key of %s: %s: %v", r.URL, r.KeyURL, err))
			return nil
		}
		idx, err := debrepo.Read(ctx, get, debrepo.Source{URL: r.URL, Suite: r.Suite, Components: r.Components, Arch: arch, Keyring: key, Fingerprints: r.Fingerprints})
		if err != nil {
			missAll(err.Error())
			return nil
		}
		indexes = append(indexes, idx)
		// The bundle's key where the hosts fetch the repository's: they
		// pin it by its fingerprint (spec.bundle sets the mirrors' keys).
		if r.KeyPath != "" {
			if err := c.write(path.Join(bundlefs.PackagesDir, r.Mirror, r.KeyPath), c.publicKey); err != nil {
				return err
			}
		}
		rel := path.Join(bundlefs.PackagesDir, r.Mirror, r.Path) + "/"
		if r.Suite != "" {
			outOf[strings.TrimSuffix(r.URL, "/")] = out(rel, r.Suite, r.Components[0])
		} else {
			outOf[strings.TrimSuffix(r.URL, "/")] = out(rel, "", "")
		}
	}
	var wants []debrepo.Want
	for _, a := range arts {
		w := debrepo.Want{Name: a.Name}
		if a.Version != "" {
			v, ok := pinned(indexes, arch, a.Name, a.Version)
			if !ok {
				c.miss("package %s %s (%s, %s): no version %s in its sources", a.Name, a.Version, family, arch, a.Version)
				continue
			}
			w.Version = v
		}
		wants = append(wants, w)
	}
	pkgs, err := debrepo.Resolve(indexes, arch, wants)
	if err != nil {
		// Name the packages that cannot be had, each with why, and bundle
		// the others.
		var ok []debrepo.Want
		for _, w := range wants {
			if _, err := debrepo.Resolve(indexes, arch, []debrepo.Want{w}); err != nil {
				c.miss("package %s (%s, %s): %v", w.Name, family, arch, err)
			} else {
				ok = append(ok, w)
			}
		}
		if pkgs, err = debrepo.Resolve(indexes, arch, ok); err != nil {
			missAll(fmt.Sprintf("resolving %s %s: %v", family, arch, err))
			return nil
		}
	}
	for _, p := range pkgs {
		o := outOf[strings.TrimSuffix(p.Base, "/")]
		if o == nil {
			return fmt.Errorf("packages: %s comes from %s, which is none of the sources read", p, p.Base)
		}
		dir := filepath.Join(c.dir, filepath.FromSlash(o.rel))
		if o.suite != "" {
			dir = debrepo.PoolDir(dir, o.component)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		dst := filepath.Join(dir, p.DebName())
		fetched, err := debrepo.DownloadStream(ctx, stream, p, dst)
		if err != nil {
			c.miss("package %s: %v", p, err)
			continue
		}
		if fetched {
			c.fetched[Package]++
		}
		o.pkgs[p.DebName()] = p
	}
	c.o.Logf("packages of %s %s: %d, with their dependencies", family, arch, len(pkgs))
	return nil
}

// pinned is the newest version of name whose upstream version (the
// package's, without epoch and revision) is upstream, as gpukit's scripts
// pin it (kubeadm 1.37.2 is 1.37.2-1.1, docker-ce 28.2.2 is
// 5:28.2.2-1~debian.12~bookworm).
func pinned(indexes []*debrepo.Index, arch, name, upstream string) (string, bool) {
	var best *debrepo.Package
	for _, idx := range indexes {
		for _, p := range idx.Packages {
			if p.Name != name || p.Architecture != arch && p.Architecture != "all" || p.Version.Version != upstream {
				continue
			}
			if best == nil || version.Compare(p.Version, best.Version) > 0 {
				best = p
			}
		}
	}
	if best == nil {
		return "", false
	}
	return best.Version.String(), true
}

// familyInfo is the row of the family called name.
func familyInfo(name string) (osfamily.Info, bool) {
	for _, i := range osfamily.All() {
		if string(i.Family) == name {
			return i, true
		}
	}
	return osfamily.Info{}, false
}
