package cluster

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/gpukit/gpukit/test/fixtures"
	"github.com/gpukit/gpukit/test/lab"
)

// Site is a lab made into an air-gapped site's Kubernetes sources, for
// gpukit to install from through its inventory's mirrors, as at a real site:
// the pkgs.k8s.io and Docker repository stand-ins (spec.mirrors.kubernetes,
// spec.mirrors.docker), and the lab registry holding registry.k8s.io's
// images under their own names below mirrorPath (spec.mirrors.registry).
type Site struct {
	// Version is the Kubernetes release (1.37.2).
	Version string
	// Packages are the published repositories.
	Packages Packages
	// Registry is spec.mirrors.registry: http://<lab registry>/<mirrorPath>.
	Registry string
	// ContainerdVersion is containerd.io's upstream version (2.4.2).
	ContainerdVersion string
	// Charts is spec.mirrors.charts: the real chart archives `make fixtures`
	// puts in the fixtures cache (.fixtures/charts), a local directory as at
	// an air-gapped site; "" when they are absent (the site installs no CNI
	// then).
	Charts string
	// Monitoring is spec.addons.monitoring (YAML) where the registry holds
	// the platform's images (WithPlatform); "" turns monitoring off.
	Monitoring string
	// Ingress is spec.addons.ingress (YAML) where the registry holds the
	// ingress's images (WithIngress); "" turns it off.
	Ingress string
	// prometheus is the Prometheus version WithPlatform pushed;
	// gpuMetrics is spec.addons.monitoring.gpuMetrics (WithDCGMSimulator)
	// and grafana whether the registry holds Grafana's stand-in
	// (WithIngress).
	prometheus, gpuMetrics string
	grafana                bool
}

// mirrorPath is where the lab registry keeps the public registries' images.
const mirrorPath = "mirror"

// NewSite builds Kubernetes version (X.Y.Z; "" the newest there are modules
// for) and the runtime, publishes their packages in l's repository and
// pushes kubeadm's images to l's registry as registry.k8s.io's mirror.
// The releases in upgrades are published beside it (their minors'
// repositories in the same tree, their images in the registry): the site's
// mirrors hold what gpukit upgrade kubernetes moves the cluster to.
func NewSite(t testing.TB, l *lab.Lab, version string, upgrades ...string) Site {
	t.Helper()
	if version == "" {
		version = strings.TrimPrefix(Versions(t)[0], "v")
	}
	kube := BuildVersion(t, "v"+version)
	rt := Build(t, "runtime")
	reg := l.Registry(t)
	began := time.Now()
	images := Images(t, kube, rt)
	var more []string
	for _, u := range upgrades {
		k := BuildVersion(t, "v"+strings.TrimPrefix(u, "v"))
		more = append(more, k)
		for _, img := range Images(t, k, rt) {
			if !slices.ContainsFunc(images, func(i Image) bool { return i.Ref == img.Ref }) { // pause is shared
				images = append(images, img)
			}
		}
	}
	PushImages(t, images, func(img Image) string { return mirrorPath + "/registry.k8s.io/" + img.Upstream }, l.PushImage)
	t.Logf("%d images pushed to the lab registry as registry.k8s.io's mirror in %s", len(images), time.Since(began).Round(time.Millisecond))
	charts, why := fixtures.Find("charts")
	if charts != "" {
		began = time.Now()
		fl := FlannelImages(t, charts)
		Mirror(t, l, fl...)
		t.Logf("flannel's %d images pushed to the lab registry as ghcr.io's mirror in %s", len(fl), time.Since(began).Round(time.Millisecond))
	} else {
		t.Logf("no chart archives: the site installs no CNI: %s", why)
	}
	pkgs := PublishPackages(t, l.LabDir(), l.Bridge, kube, rt, more...)
	ctrd := runtimeVersions(t, rt)["containerd"]
	return Site{
		Version: version, Packages: pkgs,
		Registry:          "http://" + reg + "/" + mirrorPath,
		ContainerdVersion: strings.TrimPrefix(ctrd, "v"),
		Charts:            charts,
	}
}

// LabKubernetes are the spec.kubernetes settings lab hosts need (systemd-
// nspawn containers: cgroup v1 without delegation, no CAP_SYS_RESOURCE, no
// DNS, the machine's conntrack table and kernel): inventory options real
// sites need too (containers, hosts without DNS, shared kernels). NVIDIA's
// device plugin is left out: its image cannot be had here (its chart is
// installed against a real API server in pkg/bootstrap/kubeadm's tests).
const LabKubernetes = `ignorePreflightErrors: [SystemVerification, FileContent--proc-sys-net-bridge-bridge-nf-call-iptables]
kubelet:
  cgroupDriver: cgroupfs
  failCgroupV1: false
  failSwapOn: false
  resolvConf: /etc/gpukit-lab/resolv.conf
  # The lab's hosts share this machine's disk, whose use the lab does not
  # decide (CI's build caches): the kubelet's default thresholds (10%, 15%)
  # would put every node under disk pressure when it is nearly full.
  evictionHard: {memory.available: 100Mi, nodefs.available: 1%, imagefs.available: 1%, nodefs.inodesFree: 1%}
kubeProxy: {conntrackMaxPerCore: 0}
containerd: {restrictOOMScoreAdj: true}
devicePlugin: none
`

// WriteInventory writes the inventory src to dst with the site's mirrors
// and versions, spec.kubernetes set to kube (YAML; "" leaves it) and the
// orchestrator kubernetes.
func (s Site) WriteInventory(src, dst, kube string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return fmt.Errorf("%s: %w", src, err)
	}
	if len(doc.Content) != 1 {
		return fmt.Errorf("%s: not one YAML document", src)
	}
	spec := mapping(doc.Content[0], "spec")
	setScalar(spec, "orchestrator", "kubernetes")
	m := mapping(spec, "mirrors")
	setScalar(m, "kubernetes", s.Packages.URL)
	setScalar(m, "docker", s.Packages.URL)
	// The lab's mirrors are signed with a test key, as a site re-signs its
	// mirrors with its own: the hosts trust it by its fingerprint only.
	keys := mapping(m, "signingKeys")
	for _, mirror := range []string{"kubernetes", "docker"} {
		set(keys, mirror, &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Style: yaml.FlowStyle,
			Content: []*yaml.Node{{Kind: yaml.ScalarNode, Tag: "!!str", Value: s.Packages.KeyFingerprint}}})
	}
	setScalar(m, "registry", s.Registry)
	// flannel (gpukit's default) from the chart archives, its images from
	// the registry; without the archives no CNI, and the nodes stay NotReady.
	cni := "none"
	if s.Charts != "" {
		cni = "flannel"
		setScalar(m, "charts", s.Charts)
	}
	setScalar(mapping(spec, "network"), "cni", cni)
	// The storage provisioner's image is not in the lab registry: its
	// release is installed against a real API server (pkg/kubeflow). The
	// monitoring path's are, after WithPlatform, the DCGM exporter's after
	// WithDCGMSimulator, Traefik's and Grafana's after WithIngress.
	a := mapping(spec, "addons")
	off := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: "false"}
	if s.Ingress != "" {
		var in yaml.Node
		if err := yaml.Unmarshal([]byte(s.Ingress), &in); err != nil {
			return fmt.Errorf("spec.addons.ingress: %w", err)
		}
		set(a, "ingress", in.Content[0])
	} else {
		set(mapping(a, "ingress"), "enabled", off)
	}
	if s.Monitoring != "" {
		if err := s.setMonitoring(a); err != nil {
			return err
		}
	} else {
		set(mapping(a, "monitoring"), "enabled", off)
	}
	setScalar(mapping(a, "storage"), "type", "none")
	v := mapping(spec, "versions")
	setScalar(v, "kubernetes", s.Version)
	setScalar(v, "containerRuntime", s.ContainerdVersion)
	if kube != "" {
		var k yaml.Node
		if err := yaml.Unmarshal([]byte(kube), &k); err != nil {
			return fmt.Errorf("spec.kubernetes: %w", err)
		}
		set(spec, "kubernetes", k.Content[0])
	}
	out, err := yaml.Marshal(&doc)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, out, 0o644)
}

// mapping returns the mapping at key of m, creating it.
func mapping(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	n := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	set(m, key, n)
	return n
}

func setScalar(m *yaml.Node, key, value string) {
	set(m, key, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: value})
}

// set puts value at key of m, replacing what was there.
func set(m *yaml.Node, key string, value *yaml.Node) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content[i+1] = value
			return
		}
	}
	m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}, value)
}
