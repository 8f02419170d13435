// Package bundle works out what an air-gapped site needs for gpukit to
// build its cluster from an inventory: the OS packages of every host's OS
// family, the Helm charts, Kubeflow's manifests and the remote bases they
// reach, and every container image the cluster runs. It decides nothing of
// its own: each artifact comes from the layer that installs it (the
// NVIDIA layer's and the bootstraps' package sets, the bill of materials'
// kubeadm images, the charts rendered with the inventory's values, the
// Kubeflow release built in-process), so that a bundle and a run cannot
// disagree.
package bundle

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/gpukit/gpukit/manifests"
	"github.com/gpukit/gpukit/pkg/bootstrap/kubeadm"
	"github.com/gpukit/gpukit/pkg/bootstrap/swarm"
	"github.com/gpukit/gpukit/pkg/charts"
	"github.com/gpukit/gpukit/pkg/facts"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/kubeflow"
	"github.com/gpukit/gpukit/pkg/nvidia"
	"github.com/gpukit/gpukit/pkg/scripts"
	"github.com/gpukit/gpukit/pkg/swarmplatform"
)

// Kind is what an artifact is.
type Kind string

const (
	Package Kind = "package"
	Chart   Kind = "chart"
	// Manifests is a Kubeflow release's manifests (the tag's archive).
	Manifests Kind = "kubeflow"
	// RemoteBase is a remote resource Kubeflow's kustomizations reach.
	RemoteBase Kind = "remote-base"
	Image      Kind = "image"
)

// kinds is the order a list shows them in.
var kinds = []Kind{Package, Chart, Manifests, RemoteBase, Image}

// Artifact is one thing the site needs.
type Artifact struct {
	Kind Kind `json:"kind"`
	// Name is the package, the chart, "kubeflow/manifests", the remote
	// reference, or the image in full (registry/repository:tag[@digest]).
	Name string `json:"name"`
	// Version: a package's upstream version ("" its newest), a chart's,
	// a Kubeflow release.
	Version string `json:"version,omitempty"`
	// Family is a package's OS family (debian-12, rhel-9, ...), Arch the
	// hosts' architecture as the package manager names it (amd64, arm64).
	Family string `json:"family,omitempty"`
	Arch   string `json:"arch,omitempty"`
	// Source is where it is fetched from: a package repository (URL,
	// suite and components; "" the distribution's own sources), a chart
	// repository or the site's chart mirror, an archive, the registry a
	// site's mirror holds an image in.
	Source string `json:"source,omitempty"`
	// SHA256 is the digest the bill of materials pins, where it does.
	SHA256 string `json:"sha256,omitempty"`
	// Repo is a package's repository: where gpukit's scripts add it and
	// the key that signs it; for the distribution's own sources (URL ""),
	// the components besides main it needs.
	Repo *Repo `json:"repo,omitempty"`
	// For says what needs it; Hosts which hosts, for packages.
	For   []string `json:"for,omitempty"`
	Hosts []string `json:"hosts,omitempty"`
	// Unknown says why the artifact cannot be named exactly; Name then
	// says what is missing.
	Unknown string `json:"unknown,omitempty"`
}

// Repo is a package repository as the hosts' sources name it.
type Repo struct {
	URL string `json:"url,omitempty"`
	// Mirror is the inventory's mirror that replaces URL's server (nvidia,
	// kubernetes, docker), Path where URL lies below it, KeyPath where its
	// key does (where the hosts fetch it from the mirror).
	Mirror     string   `json:"mirror,omitempty"`
	Path       string   `json:"path,omitempty"`
	KeyPath    string   `json:"keyPath,omitempty"`
	Suite      string   `json:"suite,omitempty"`
	Components []string `json:"components,omitempty"`
	// KeyURL is its signing key's file, which must hold keys with these
	// Fingerprints only.
	KeyURL       string   `json:"keyURL,omitempty"`
	Fingerprints []string `json:"fingerprints,omitempty"`
}

// Host is a host of the inventory and its facts; nil when it did not
// answer (Err says why).
type Host struct {
	Machine inventory.Machine
	Facts   *facts.Facts
	Err     error
}

// List is every artifact an inventory implies.
type List struct {
	Cluster   string     `json:"cluster"`
	Artifacts []Artifact `json:"artifacts"`
	// archives are the chart archives the list rendered, by name and
	// version: a bundle made from the list fetches them no second time.
	archives map[string][]byte
}

// Unknown are the artifacts that cannot be named exactly.
func (l *List) Unknown() []Artifact {
	var out []Artifact
	for _, a := range l.Artifacts {
		if a.Unknown != "" {
			out = append(out, a)
		}
	}
	return out
}

// known are the artifacts of kind k named exactly.
func (l *List) known(k Kind) []Artifact {
	var out []Artifact
	for _, a := range l.Of(k) {
		if a.Unknown == "" {
			out = append(out, a)
		}
	}
	return out
}

// Of are the artifacts of kind k.
func (l *List) Of(k Kind) []Artifact {
	var out []Artifact
	for _, a := range l.Artifacts {
		if a.Kind == k {
			out = append(out, a)
		}
	}
	return out
}

// Compute lists what inv implies for hosts (every machine of inv, with
// the facts of those that answered). Kubeflow's build logs through logf.
func Compute(ctx context.Context, inv *inventory.Inventory, hosts []Host, logf func(string, ...any)) (*List, error) {
	b := &builder{inv: inv, index: map[string]int{}, archives: map[string][]byte{}}
	for _, h := range hosts {
		b.host(h)
	}
	if inv.Cluster.Spec.Orchestrator == inventory.Kubernetes {
		if err := b.kubernetes(ctx, logf); err != nil {
			return nil, err
		}
	} else {
		// the swarm platform's stacks (gpukit platform deploy)
		for _, im := range swarmplatform.SiteOf(inv).Images() {
			b.image(im[0], "the platform on swarm ("+im[1]+")")
		}
	}
	l := &List{Cluster: inv.Cluster.Metadata.Name, Artifacts: b.out, archives: b.archives}
	slices.SortStableFunc(l.Artifacts, func(x, y Artifact) int {
		return cmp.Or(cmp.Compare(slices.Index(kinds, x.Kind), slices.Index(kinds, y.Kind)),
			cmp.Compare(x.Family, y.Family), cmp.Compare(x.Arch, y.Arch), cmp.Compare(x.Source, y.Source), cmp.Compare(x.Name, y.Name), cmp.Compare(x.Version, y.Version))
	})
	return l, nil
}

type builder struct {
	inv      *inventory.Inventory
	out      []Artifact
	index    map[string]int // kind, family, source, name, version -> out
	archives map[string][]byte
}

// add records a, merging what needs it into an artifact listed already.
func (b *builder) add(a Artifact) {
	key := strings.Join([]string{string(a.Kind), a.Family, a.Arch, a.Source, a.Name, a.Version}, "\x00")
	i, ok := b.index[key]
	if !ok {
		b.index[key] = len(b.out)
		b.out = append(b.out, a)
		return
	}
	have := &b.out[i]
	for _, f := range a.For {
		if !slices.Contains(have.For, f) {
			have.For = append(have.For, f)
		}
	}
	for _, h := range a.Hosts {
		if !slices.Contains(have.Hosts, h) {
			have.Hosts = append(have.Hosts, h)
		}
	}
}

// host adds the OS packages a host gets: the NVIDIA layer's on a GPU
// host, the orchestrator's on every host.
func (b *builder) host(h Host) {
	name := h.Machine.Name
	if h.Facts == nil {
		why := "the host did not answer"
		if h.Err != nil {
			why += ": " + h.Err.Error()
		}
		b.add(Artifact{Kind: Package, Name: "the packages of " + name, Hosts: []string{name},
			Unknown: why + "; its OS family, kernel (for the kernel headers) and GPUs are not known"})
		return
	}
	var sets []scripts.PackageSet
	w, err := nvidia.Decide(b.inv, h.Machine, h.Facts)
	if err == nil {
		sets = w.PackageSets(b.inv, h.Facts)
	} else {
		b.add(Artifact{Kind: Package, Name: "the packages of " + name, Hosts: []string{name}, Unknown: "the NVIDIA stack: " + err.Error()})
	}
	var more []scripts.PackageSet
	switch o := b.inv.Cluster.Spec.Orchestrator; o {
	case inventory.Kubernetes:
		more, err = kubeadm.PackageSets(b.inv, h.Facts)
	case inventory.Swarm:
		more, err = swarm.PackageSets(b.inv, h.Facts)
	}
	if err != nil {
		b.add(Artifact{Kind: Package, Name: "the packages of " + name, Hosts: []string{name},
			Unknown: fmt.Sprintf("the %s packages: %v", b.inv.Cluster.Spec.Orchestrator, err)})
	}
	for _, s := range append(sets, more...) {
		for _, n := range s.Names {
			a := Artifact{Kind: Package, Name: n, Version: s.Version, Family: string(s.Family.Family), Arch: s.Family.PackageArch(h.Facts.Arch), Source: sourceOf(s),
				For: []string{s.For}, Hosts: []string{name}}
			if s.Repo != "" || len(s.Components) > 0 {
				a.Repo = &Repo{URL: s.Repo, Mirror: s.Mirror, Path: s.Path, KeyPath: s.KeyPath, Suite: s.Suite, Components: s.Components, KeyURL: s.KeyURL, Fingerprints: s.Key.Fingerprints}
			}
			b.add(a)
		}
	}
}

// sourceOf is a package set's source as apt's sources name it: "URL /"
// (flat), "URL SUITE COMPONENT..." or, for the distribution's own sources,
// "" and the components the host's sources need besides main.
func sourceOf(s scripts.PackageSet) string {
	if s.Repo == "" {
		if len(s.Components) == 0 {
			return ""
		}
		return "components " + strings.Join(s.Components, " ")
	}
	if s.Suite == "" {
		return s.Repo + " /"
	}
	return strings.Join(append([]string{s.Repo, s.Suite}, s.Components...), " ")
}

// kubernetes adds kubeadm's images, the Helm releases' charts and images,
// the platform's own objects' images and Kubeflow's.
func (b *builder) kubernetes(ctx context.Context, logf func(string, ...any)) error {
	spec := &b.inv.Cluster.Spec
	version := spec.Versions.Kubernetes
	refs, ok := manifests.Bill().KubeadmImageRefs(version)
	if !ok {
		b.add(Artifact{Kind: Image, Name: "kubeadm's images for Kubernetes " + version, Unknown: "the bill of materials has no kubeadmImages row for its minor"})
	}
	for _, r := range refs {
		b.image(r, "kubeadm "+version)
	}
	site := kubeflow.SiteOf(b.inv)
	var releases []charts.Release
	for _, fn := range []func(*inventory.Inventory) (charts.Release, bool){kubeadm.CNIRelease, kubeadm.GPURelease} {
		if r, ok := fn(b.inv); ok {
			releases = append(releases, r)
		}
	}
	releases = append(releases, site.Releases()...)
	var apis []string
	if monitoring := spec.Addons.Monitoring.Enabled; monitoring == nil || *monitoring {
		// Its CRDs come first: the releases after it render their
		// ServiceMonitors, as they do when installed.
		apis = append(apis, "monitoring.coreos.com/v1")
		objs, err := site.StatsdObjects()
		if err != nil {
			return err
		}
		b.images(objs, "the statsd exporter (training metrics)")
	}
	for _, r := range releases {
		b.release(ctx, r, site, "v"+version, apis)
	}
	if k := spec.Kubeflow; k.Enabled {
		return b.kubeflow(ctx, k, logf)
	}
	return nil
}

// release adds a release's chart and the images it renders to.
func (b *builder) release(ctx context.Context, r charts.Release, site kubeflow.Site, kubeVersion string, apis []string) {
	c := r.Chart
	source := c.Repo
	if site.Charts != "" {
		source = string(site.Charts)
	}
	why := "release " + r.Namespace + "/" + r.Name
	b.add(Artifact{Kind: Chart, Name: c.Name, Version: c.Version, Source: source, SHA256: c.SHA256, For: []string{why}})
	ch, archive, err := site.Charts.Fetch(ctx, c, site.ChartAccess)
	if archive != nil {
		b.archives[c.String()] = archive
	}
	if err == nil {
		var m string
		if m, err = charts.Render(ctx, r, ch, kubeVersion, apis...); err == nil {
			var refs []string
			if refs, err = ImagesIn(m); err == nil {
				for _, ref := range refs {
					b.image(ref, why)
				}
				return
			}
		}
	}
	b.add(Artifact{Kind: Image, Name: "the images of chart " + c.String(), For: []string{why}, Unknown: err.Error()})
}

// kubeflow adds the release's manifests, the remote resources they reach
// and the images of its objects.
func (b *builder) kubeflow(ctx context.Context, k inventory.Kubeflow, logf func(string, ...any)) error {
	v := cmp.Or(k.Version, manifests.Bill().Kubeflow.Default)
	why := "Kubeflow " + v
	src := cmp.Or(k.Manifests, kubeflow.UpstreamArchive(v))
	b.add(Artifact{Kind: Manifests, Name: "kubeflow/manifests", Version: v, Source: src, SHA256: manifests.Bill().KubeflowSHA256(v), For: []string{why}})
	remote, objs, missing, err := kubeflow.Manifests{Version: v, Source: k.Manifests, RemoteBases: k.RemoteBases}.Contents(ctx, logf)
	if err != nil {
		b.add(Artifact{Kind: Image, Name: "the images of Kubeflow " + v, For: []string{why}, Unknown: err.Error()})
		return nil
	}
	for _, r := range remote {
		a := Artifact{Kind: RemoteBase, Name: r.Ref, Source: r.Path, For: []string{why}}
		if k.RemoteBases != "" {
			a.Source = k.RemoteBases + ": " + r.Path
		}
		b.add(a)
	}
	if missing != "" {
		b.add(Artifact{Kind: Image, Name: "the images of Kubeflow " + v, For: []string{why}, Unknown: missing})
		return nil
	}
	b.images(objs, why)
	return nil
}

func (b *builder) images(objs []*yaml.RNode, why string) {
	for _, ref := range ImagesOf(objs) {
		b.image(ref, why)
	}
}

// image adds ref, and where the site's registry mirror holds it. An image
// of a registry containerd is not pointed at the mirror for cannot reach a
// site's nodes through gpukit's mirror: named as unknown.
func (b *builder) image(ref, why string) {
	a := Artifact{Kind: Image, Name: ref, For: []string{why}}
	if m := b.inv.Cluster.Spec.Mirrors.Registry; m != "" {
		a.Source = strings.TrimSuffix(m, "/") + "/" + ref
	}
	if reg, _, _ := strings.Cut(ref, "/"); !slices.Contains(kubeadm.MirroredRegistries, reg) {
		a.Unknown = fmt.Sprintf("the nodes pull %s's images from the registry mirror only for %s", reg, strings.Join(kubeadm.MirroredRegistries, ", "))
	}
	b.add(a)
}
