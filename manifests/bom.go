// Package manifests is gpukit's embedded data: the bill of materials
// (bom.yaml: every pinned version, chart, image and Kubeflow release, and
// the driver/CUDA table) and the base Helm values of the charts gpukit
// installs (values/). It imports nothing from gpukit: every layer, the
// inventory's defaults included, reads its pins here, so that one file says
// what a run may fetch and `gpukit version` can print all of it.
package manifests

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"
)

//go:embed bom.yaml
var bomYAML []byte

// BOM is the bill of materials.
type BOM struct {
	APIVersion string         `json:"apiVersion" yaml:"apiVersion"`
	Kind       string         `json:"kind" yaml:"kind"`
	Defaults   Defaults       `json:"defaults" yaml:"defaults"`
	Kubernetes KubernetesPins `json:"kubernetes" yaml:"kubernetes"`
	// KubeadmImages are the images kubeadm pulls besides the control
	// plane's own, per Kubernetes minor.
	KubeadmImages []KubeadmImages `json:"kubeadmImages" yaml:"kubeadmImages"`
	Charts        []Chart         `json:"charts" yaml:"charts"`
	Images        []Image         `json:"images" yaml:"images"`
	Kubeflow      Kubeflow        `json:"kubeflow" yaml:"kubeflow"`
	CUDADrivers   []CUDADriver    `json:"cudaDrivers" yaml:"cudaDrivers"`
	// GPUArchitectures: which drivers and CUDA toolkits each GPU
	// generation runs, and how a host's GPU is recognised, oldest first.
	GPUArchitectures []GPUArchitecture `json:"gpuArchitectures" yaml:"gpuArchitectures"`
	SigningKeys      []SigningKey      `json:"signingKeys" yaml:"signingKeys"`
	// Distributions are the OS families' own package archives.
	Distributions []Distribution `json:"distributions" yaml:"distributions"`
	// MIGGPUs are the GPU-instance profiles of each MIG-capable GPU model.
	MIGGPUs []MIGGPU `json:"migGPUs" yaml:"migGPUs"`
	// NCCLThresholds are gpukit verify's bandwidth floors.
	NCCLThresholds []NCCLThreshold `json:"ncclThresholds" yaml:"ncclThresholds"`
}

// NCCLThreshold is the lowest all_reduce bus bandwidth (GB/s) GPUs of a
// model reach within a node (Scope node, with GPUs of them: 0 any) or
// across nodes (Scope cluster).
type NCCLThreshold struct {
	GPU      string  `json:"gpu" yaml:"gpu"`
	GPUs     int     `json:"gpus,omitempty" yaml:"gpus,omitempty"`
	Scope    string  `json:"scope" yaml:"scope"`
	MinBusBW float64 `json:"minBusBW" yaml:"minBusBW"`
}

// NCCLThreshold is the floor for GPUs named product (nvidia-smi's name),
// gpus of them per node, in scope ("node", "cluster"): the entry with the
// longest matching name; 0 when none matches.
func (b *BOM) NCCLThreshold(product string, gpus int, scope string) float64 {
	best, bestLen := 0.0, 0
	for _, t := range b.NCCLThresholds {
		if t.Scope != scope || t.GPUs != 0 && t.GPUs != gpus || !strings.Contains(strings.ToUpper(product), strings.ToUpper(t.GPU)) {
			continue
		}
		if len(t.GPU) > bestLen {
			best, bestLen = t.MinBusBW, len(t.GPU)
		}
	}
	return best
}

// MIGGPU is one MIG-capable GPU model and the GPU instances it can hold.
type MIGGPU struct {
	Name string `json:"name" yaml:"name"`
	// Names are product names as nvidia-smi writes them, less "NVIDIA ".
	Names      []string `json:"names" yaml:"names"`
	PCIDevices []string `json:"pciDevices" yaml:"pciDevices"`
	// MemorySlices and ComputeSlices are what a GPU instance is cut from.
	MemorySlices  int          `json:"memorySlices" yaml:"memorySlices"`
	ComputeSlices int          `json:"computeSlices" yaml:"computeSlices"`
	Profiles      []MIGProfile `json:"profiles" yaml:"profiles"`
}

// MIGProfile is a GPU-instance profile: Max instances at once, each taking
// Slices memory slices from one of Starts (nvidia-smi mig -lgipp's
// placements); its compute slices are the name's "Ng".
type MIGProfile struct {
	Name   string `json:"name" yaml:"name"`
	ID     int    `json:"id" yaml:"id"`
	Max    int    `json:"max" yaml:"max"`
	Slices int    `json:"slices" yaml:"slices"`
	Starts []int  `json:"starts" yaml:"starts"`
	// MinBranch is the first driver branch that offers it (0: all do).
	MinBranch int `json:"minBranch,omitempty" yaml:"minBranch,omitempty"`
}

// Defaults are the versions a host gets when the inventory names none.
type Defaults struct {
	NvidiaDriver     string `json:"nvidiaDriver" yaml:"nvidiaDriver"`
	CUDA             string `json:"cuda" yaml:"cuda"`
	ContainerToolkit string `json:"containerToolkit" yaml:"containerToolkit"`
	Kubernetes       string `json:"kubernetes" yaml:"kubernetes"`
	Containerd       string `json:"containerd" yaml:"containerd"`
	Docker           string `json:"docker" yaml:"docker"`
}

// KubernetesPins bound the Kubernetes minors gpukit installs (1.Min to 1.Max).
type KubernetesPins struct {
	MinMinor int `json:"minMinor" yaml:"minMinor"`
	MaxMinor int `json:"maxMinor" yaml:"maxMinor"`
}

// Distribution is an OS family's own package archives (apt): each URL with
// its suites, the components gpukit's packages need, and the keyring on
// the machine running gpukit whose keys, pinned by Fingerprints, sign them.
type Distribution struct {
	Family       string    `json:"family" yaml:"family"`
	Keyring      string    `json:"keyring" yaml:"keyring"`
	Archives     []Archive `json:"archives" yaml:"archives"`
	Components   []string  `json:"components" yaml:"components"`
	Fingerprints []string  `json:"fingerprints" yaml:"fingerprints"`
}

// Archive is one archive of a distribution and its suites.
type Archive struct {
	URL    string   `json:"url" yaml:"url"`
	Suites []string `json:"suites" yaml:"suites"`
}

// Distribution is family's row (false: none).
func (b *BOM) Distribution(family string) (Distribution, bool) {
	for _, d := range b.Distributions {
		if d.Family == family {
			return d, true
		}
	}
	return Distribution{}, false
}

// KubeadmImages are the tags of the images kubeadm of a Kubernetes minor
// pulls besides the control plane's own, as kubeadm of Release names them.
type KubeadmImages struct {
	Minor   int    `json:"minor" yaml:"minor"`
	Release string `json:"release" yaml:"release"`
	Etcd    string `json:"etcd" yaml:"etcd"`
	CoreDNS string `json:"coredns" yaml:"coredns"`
	Pause   string `json:"pause" yaml:"pause"`
}

// KubeadmImageRefs are the images kubeadm of Kubernetes version (1.37.2)
// pulls, as `kubeadm config images list` prints them; false for a minor
// the bill has no row for.
func (b *BOM) KubeadmImageRefs(version string) ([]string, bool) {
	parts := strings.Split(strings.TrimPrefix(version, "v"), ".")
	if len(parts) < 2 {
		return nil, false
	}
	minor, err := strconv.Atoi(parts[1])
	if err != nil {
		return nil, false
	}
	for _, k := range b.KubeadmImages {
		if k.Minor != minor {
			continue
		}
		const r = "registry.k8s.io/"
		v := "v" + strings.TrimPrefix(version, "v")
		return []string{r + "kube-apiserver:" + v, r + "kube-controller-manager:" + v, r + "kube-scheduler:" + v, r + "kube-proxy:" + v,
			r + "coredns/coredns:" + k.CoreDNS, r + "pause:" + k.Pause, r + "etcd:" + k.Etcd}, true
	}
	return nil, false
}

// Chart is a Helm chart at one version, in its upstream repository.
type Chart struct {
	Name    string `json:"name" yaml:"name"`
	Version string `json:"version" yaml:"version"`
	Repo    string `json:"repo" yaml:"repo"`
	SHA256  string `json:"sha256,omitempty" yaml:"sha256,omitempty"`
}

// Image is a container image gpukit deploys itself.
type Image struct {
	Name   string `json:"name" yaml:"name"`
	Ref    string `json:"ref" yaml:"ref"`
	Digest string `json:"digest,omitempty" yaml:"digest,omitempty"`
}

// Kubeflow lists the kubeflow/manifests releases gpukit deploys.
type Kubeflow struct {
	Default  string            `json:"default" yaml:"default"`
	Releases []KubeflowRelease `json:"releases" yaml:"releases"`
	// Archive is the address of a release's source archive, {version}
	// standing for the tag.
	Archive string `json:"archive" yaml:"archive"`
}

// KubeflowRelease is one kubeflow/manifests tag.
type KubeflowRelease struct {
	Version string `json:"version" yaml:"version"`
	SHA256  string `json:"sha256,omitempty" yaml:"sha256,omitempty"`
}

// CUDADriver is one row of NVIDIA's table: a CUDA toolkit and the oldest
// driver that runs it.
type CUDADriver struct {
	CUDA      string `json:"cuda" yaml:"cuda"`
	MinDriver string `json:"minDriver" yaml:"minDriver"`
}

// GPUArchitecture is one GPU generation. Zero bounds are open: a branch or
// CUDA release the table does not bound is supported.
type GPUArchitecture struct {
	Name string `json:"name" yaml:"name"`
	// PCIDevices are ranges of NVIDIA PCI device ids, "1e00-1fff": how a GPU
	// is recognised before any driver is installed.
	PCIDevices []string `json:"pciDevices" yaml:"pciDevices"`
	// Names are product-name prefixes (as nvidia-smi names the GPU, less
	// "NVIDIA "), for a GPU whose device id no range holds.
	Names []string `json:"names,omitempty" yaml:"names,omitempty"`
	// FirstBranch and LastBranch bound the driver branches that support it.
	FirstBranch int `json:"firstBranch,omitempty" yaml:"firstBranch,omitempty"`
	LastBranch  int `json:"lastBranch,omitempty" yaml:"lastBranch,omitempty"`
	// FirstCUDA and LastCUDA bound the CUDA toolkits that target it.
	FirstCUDA string `json:"firstCUDA,omitempty" yaml:"firstCUDA,omitempty"`
	LastCUDA  string `json:"lastCUDA,omitempty" yaml:"lastCUDA,omitempty"`
	// OpenModules: NVIDIA's open kernel modules drive it (Turing and newer).
	OpenModules bool `json:"openModules,omitempty" yaml:"openModules,omitempty"`
}

// The package repositories whose signing keys the bill pins.
const (
	RepoCUDA             = "cuda"
	RepoContainerToolkit = "container-toolkit"
	RepoKubernetes       = "kubernetes"
	RepoDocker           = "docker"
)

// SigningKey pins the OpenPGP key that signs one package repository: a host
// fetches File from the repository's base URL (or the site's mirror of it)
// and trusts it only when every primary key in it has one of Fingerprints.
type SigningKey struct {
	Repository string `json:"repository" yaml:"repository"`
	// PackageManager is apt or dnf; empty for a key that signs both.
	PackageManager string `json:"packageManager,omitempty" yaml:"packageManager,omitempty"`
	// File is the key's path under the repository's base URL.
	File string `json:"file" yaml:"file"`
	// Fingerprints are full v4 (40 hex digits) or v5/v6 (64) fingerprints,
	// upper case, without spaces.
	Fingerprints []string `json:"fingerprints" yaml:"fingerprints"`
}

var (
	fingerprintRE = regexp.MustCompile(`^[0-9A-F]{40}([0-9A-F]{24})?$`)
	keyFileRE     = regexp.MustCompile(`^[A-Za-z0-9_-][A-Za-z0-9._-]*(/[A-Za-z0-9_-][A-Za-z0-9._-]*)*$`)
)

// CheckFingerprint accepts a full OpenPGP fingerprint as CheckSigningKey wants it.
func CheckFingerprint(f string) error {
	if !fingerprintRE.MatchString(f) {
		return fmt.Errorf("fingerprint %q: want a full fingerprint, 40 (v4) or 64 (v5, v6) upper-case hex digits", f)
	}
	return nil
}

// CheckSigningKey checks a key's file name and fingerprints: both end up in
// a root script on every host.
func CheckSigningKey(k SigningKey) error {
	if !keyFileRE.MatchString(k.File) {
		return fmt.Errorf("signing key file %q", k.File)
	}
	if len(k.Fingerprints) == 0 {
		return fmt.Errorf("signing key %s pins no fingerprint", k.File)
	}
	for _, f := range k.Fingerprints {
		if err := CheckFingerprint(f); err != nil {
			return err
		}
	}
	return nil
}

// parsed is the embedded bill, read once: it is part of the binary, so a
// defect in it is a build defect (TestBill reads it), never bad input.
var parsed = sync.OnceValues(func() (*BOM, error) { return Parse(bomYAML) })

// Bill returns the embedded bill of materials. Callers must not modify it:
// use the accessors, which return copies.
func Bill() *BOM {
	b, err := parsed()
	if err != nil {
		panic(err)
	}
	return b
}

// decodeStrict reads one YAML document into v, refusing fields v lacks.
func decodeStrict(b []byte, v any) error {
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	return nil
}

// YAML is the embedded bill as written, comments included.
func YAML() []byte { return slices.Clone(bomYAML) }

// Parse reads and checks a bill of materials.
func Parse(b []byte) (*BOM, error) {
	// yaml.v3 keeps a scalar's text for a string field: an unquoted 13.10
	// stays "13.10" (a JSON round trip would make it 13.1).
	var bom BOM
	if err := decodeStrict(b, &bom); err != nil {
		return nil, fmt.Errorf("manifests: bom.yaml: %w", err)
	}
	if err := bom.check(); err != nil {
		return nil, fmt.Errorf("manifests: bom.yaml: %w", err)
	}
	return &bom, nil
}

func (b *BOM) check() error {
	var errs []string
	need := func(what, v string) {
		if strings.TrimSpace(v) == "" {
			errs = append(errs, what+" is empty")
		}
	}
	d := b.Defaults
	for _, f := range []struct{ what, v string }{
		{"defaults.nvidiaDriver", d.NvidiaDriver}, {"defaults.cuda", d.CUDA}, {"defaults.containerToolkit", d.ContainerToolkit},
		{"defaults.kubernetes", d.Kubernetes}, {"defaults.containerd", d.Containerd}, {"defaults.docker", d.Docker},
		{"kubeflow.default", b.Kubeflow.Default}, {"kubeflow.archive", b.Kubeflow.Archive},
	} {
		need(f.what, f.v)
	}
	if b.Kubernetes.MinMinor <= 0 || b.Kubernetes.MaxMinor < b.Kubernetes.MinMinor {
		errs = append(errs, fmt.Sprintf("kubernetes: minors %d to %d", b.Kubernetes.MinMinor, b.Kubernetes.MaxMinor))
	}
	for minor := b.Kubernetes.MinMinor; minor <= b.Kubernetes.MaxMinor; minor++ {
		if !slices.ContainsFunc(b.KubeadmImages, func(k KubeadmImages) bool {
			return k.Minor == minor && k.Etcd != "" && k.CoreDNS != "" && k.Pause != "" && strings.HasPrefix(k.Release, fmt.Sprintf("1.%d.", minor))
		}) {
			errs = append(errs, fmt.Sprintf("kubeadmImages: no complete row for Kubernetes 1.%d", minor))
		}
	}
	seen := map[string]bool{}
	for i, c := range b.Charts {
		need(fmt.Sprintf("charts[%d].name", i), c.Name)
		need(fmt.Sprintf("charts[%d].version", i), c.Version)
		need(fmt.Sprintf("charts[%d].repo", i), c.Repo)
		if seen["chart "+c.Name] {
			errs = append(errs, "chart "+c.Name+" listed twice")
		}
		seen["chart "+c.Name] = true
	}
	for i, im := range b.Images {
		need(fmt.Sprintf("images[%d].name", i), im.Name)
		need(fmt.Sprintf("images[%d].ref", i), im.Ref)
		if seen["image "+im.Name] {
			errs = append(errs, "image "+im.Name+" listed twice")
		}
		seen["image "+im.Name] = true
	}
	if !slices.ContainsFunc(b.Kubeflow.Releases, func(r KubeflowRelease) bool { return r.Version == b.Kubeflow.Default }) {
		errs = append(errs, "kubeflow.default "+b.Kubeflow.Default+" is not among kubeflow.releases")
	}
	if !strings.Contains(b.Kubeflow.Archive, "{version}") {
		errs = append(errs, "kubeflow.archive names no {version}")
	}
	for i, r := range b.CUDADrivers {
		need(fmt.Sprintf("cudaDrivers[%d].cuda", i), r.CUDA)
		need(fmt.Sprintf("cudaDrivers[%d].minDriver", i), r.MinDriver)
	}
	errs = append(errs, checkArchitectures(b.GPUArchitectures)...)
	errs = append(errs, checkMIG(b.MIGGPUs)...)
	for i, t := range b.NCCLThresholds {
		if t.GPU == "" || t.MinBusBW <= 0 || t.Scope != "node" && t.Scope != "cluster" {
			errs = append(errs, fmt.Sprintf("ncclThresholds[%d]: a gpu, scope node or cluster, and a positive minBusBW", i))
		}
	}
	for _, repo := range []string{RepoCUDA, RepoContainerToolkit, RepoKubernetes, RepoDocker} {
		for _, pm := range []string{"apt", "dnf"} {
			if _, ok := b.SigningKey(repo, pm); !ok {
				errs = append(errs, "signingKeys: no key for the "+repo+" repository ("+pm+")")
			}
		}
	}
	for i, d := range b.Distributions {
		if d.Family == "" || d.Keyring == "" || len(d.Archives) == 0 || len(d.Components) == 0 || len(d.Fingerprints) == 0 {
			errs = append(errs, fmt.Sprintf("distributions[%d]: a family, keyring, archives, components and fingerprints", i))
		}
		for _, f := range d.Fingerprints {
			if !fingerprintRE.MatchString(f) {
				errs = append(errs, fmt.Sprintf("distributions[%d]: fingerprint %q: want 40 or 64 upper-case hex digits", i, f))
			}
		}
		for j, a := range d.Archives {
			if !strings.HasSuffix(a.URL, "/") || len(a.Suites) == 0 {
				errs = append(errs, fmt.Sprintf("distributions[%d].archives[%d]: a URL ending in / and suites", i, j))
			}
		}
	}
	for i, k := range b.SigningKeys {
		if err := CheckSigningKey(k); err != nil {
			errs = append(errs, fmt.Sprintf("signingKeys[%d]: %v", i, err))
		}
		if k.PackageManager != "" && k.PackageManager != "apt" && k.PackageManager != "dnf" {
			errs = append(errs, fmt.Sprintf("signingKeys[%d].packageManager %q: want apt, dnf or none", i, k.PackageManager))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

// Chart returns the pinned chart called name. The bill is gpukit's own, so
// asking for a chart it lacks is a defect: it panics (every caller's
// package initialises from it, so any test of that package finds it).
func (b *BOM) Chart(name string) Chart {
	for _, c := range b.Charts {
		if c.Name == name {
			return c
		}
	}
	panic(fmt.Sprintf("manifests: bom.yaml pins no chart %q", name))
}

// Image returns the pinned image called name; it panics as Chart does.
func (b *BOM) Image(name string) Image {
	for _, im := range b.Images {
		if im.Name == name {
			return im
		}
	}
	panic(fmt.Sprintf("manifests: bom.yaml pins no image %q", name))
}

// SigningKey returns the key that signs repository repo (Repo*) for package
// manager pm (apt, dnf), as a copy.
func (b *BOM) SigningKey(repo, pm string) (SigningKey, bool) {
	for _, k := range b.SigningKeys {
		if k.Repository == repo && (k.PackageManager == "" || k.PackageManager == pm) {
			k.Fingerprints = slices.Clone(k.Fingerprints)
			return k, true
		}
	}
	return SigningKey{}, false
}

// KubeflowVersions are the releases gpukit deploys, oldest first (a fresh
// slice).
func (b *BOM) KubeflowVersions() []string {
	out := make([]string, len(b.Kubeflow.Releases))
	for i, r := range b.Kubeflow.Releases {
		out[i] = r.Version
	}
	return out
}

// KubeflowArchive is the address of release version's source archive.
func (b *BOM) KubeflowArchive(version string) string {
	return strings.ReplaceAll(b.Kubeflow.Archive, "{version}", version)
}

// KubeflowSHA256 is the pinned digest of version's archive ("": none).
func (b *BOM) KubeflowSHA256(version string) string {
	for _, r := range b.Kubeflow.Releases {
		if r.Version == version {
			return r.SHA256
		}
	}
	return ""
}

var pciRange = regexp.MustCompile(`^([0-9a-f]{4})-([0-9a-f]{4})$`)

// checkArchitectures: every range well formed and held by one architecture
// only, every architecture named once and recognisable.
func checkArchitectures(archs []GPUArchitecture) []string {
	var errs []string
	type span struct {
		lo, hi string
		arch   string
	}
	var spans []span
	names := map[string]bool{}
	for i, a := range archs {
		if a.Name == "" || names[a.Name] {
			errs = append(errs, fmt.Sprintf("gpuArchitectures[%d]: name %q empty or listed twice", i, a.Name))
		}
		names[a.Name] = true
		if len(a.PCIDevices) == 0 {
			errs = append(errs, fmt.Sprintf("gpuArchitectures[%d] (%s): no pciDevices", i, a.Name))
		}
		for _, r := range a.PCIDevices {
			m := pciRange.FindStringSubmatch(r)
			if m == nil || m[1] > m[2] {
				errs = append(errs, fmt.Sprintf("gpuArchitectures[%d] (%s): pciDevices %q: want lowercase hex LOW-HIGH", i, a.Name, r))
				continue
			}
			for _, o := range spans {
				if m[1] <= o.hi && o.lo <= m[2] {
					errs = append(errs, fmt.Sprintf("gpuArchitectures[%d] (%s): pciDevices %s overlaps %s's %s-%s", i, a.Name, r, o.arch, o.lo, o.hi))
				}
			}
			spans = append(spans, span{m[1], m[2], a.Name})
		}
		if a.FirstBranch != 0 && a.LastBranch != 0 && a.FirstBranch > a.LastBranch {
			errs = append(errs, fmt.Sprintf("gpuArchitectures[%d] (%s): firstBranch after lastBranch", i, a.Name))
		}
	}
	return errs
}

// checkMIG keeps the MIG table self-consistent: every placement inside the
// GPU, a profile's compute slices no more than the GPU has, names and ids
// unique per model.
func checkMIG(gpus []MIGGPU) []string {
	var errs []string
	for i, g := range gpus {
		at := fmt.Sprintf("migGPUs[%d] (%s)", i, g.Name)
		if len(g.Names) == 0 || g.MemorySlices <= 0 || g.ComputeSlices <= 0 || len(g.Profiles) == 0 {
			errs = append(errs, at+": names, memorySlices, computeSlices and profiles are all needed")
		}
		seen := map[string]bool{}
		for _, p := range g.Profiles {
			c, ok := ComputeSlices(p.Name)
			switch {
			case !ok:
				errs = append(errs, fmt.Sprintf("%s: profile %q: want a name such as 1g.10gb", at, p.Name))
			case c > g.ComputeSlices:
				errs = append(errs, fmt.Sprintf("%s: profile %s takes %d compute slices of %d", at, p.Name, c, g.ComputeSlices))
			}
			if seen[p.Name] || seen[fmt.Sprint(p.ID)] {
				errs = append(errs, fmt.Sprintf("%s: profile %s (id %d) listed twice", at, p.Name, p.ID))
			}
			seen[p.Name], seen[fmt.Sprint(p.ID)] = true, true
			if p.Max <= 0 || p.Slices <= 0 || len(p.Starts) == 0 {
				errs = append(errs, fmt.Sprintf("%s: profile %s: max, slices and starts are all needed", at, p.Name))
			}
			for _, st := range p.Starts {
				if st < 0 || st%p.Slices != 0 && p.Slices > 1 || st+p.Slices > g.MemorySlices {
					errs = append(errs, fmt.Sprintf("%s: profile %s: placement %d:%d is not within %d slices", at, p.Name, st, p.Slices, g.MemorySlices))
				}
			}
		}
	}
	return errs
}

// ComputeSlices reads a GPU-instance profile name's compute slices (the 3
// of 3g.40gb).
func ComputeSlices(profile string) (int, bool) {
	g, rest, ok := strings.Cut(profile, "g.")
	if !ok || !strings.Contains(rest, "gb") {
		return 0, false
	}
	n, err := strconv.Atoi(g)
	return n, err == nil && n > 0
}

// MIGGPU is the table's entry for a GPU: by the longest of its names
// contained in product (nvidia-smi's name), else by its PCI device id.
func (b *BOM) MIGGPU(product, deviceID string) (MIGGPU, bool) {
	best, bestLen := -1, 0
	up := strings.ToUpper(product)
	for i, g := range b.MIGGPUs {
		for _, n := range g.Names {
			if len(n) > bestLen && strings.Contains(up, strings.ToUpper(n)) {
				best, bestLen = i, len(n)
			}
		}
	}
	if best >= 0 {
		return b.MIGGPUs[best], true
	}
	id := strings.TrimPrefix(strings.ToLower(deviceID), "0x")
	for _, g := range b.MIGGPUs {
		if id != "" && slices.Contains(g.PCIDevices, id) {
			return g, true
		}
	}
	return MIGGPU{}, false
}
