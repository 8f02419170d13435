package cluster

import (
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/gpukit/gpukit/manifests"
	"github.com/gpukit/gpukit/pkg/charts"
	"github.com/gpukit/gpukit/test/fixtures"
	"github.com/gpukit/gpukit/test/lab"
)

// PlatformImages are the images of the platform's monitoring path that Go
// modules make (test/k8s/build.sh platform), under their public names:
// prometheus-operator and its config reloader at kube-prometheus-stack's
// appVersion (the chart's default images), Prometheus at the version the
// module proxy serves (the chart pins another: the inventory's values name
// this one, as a site pins what its mirror holds), and the statsd
// exporter gpukit's platform/training-metrics phase runs.
//
// What the chart also runs but Go modules cannot make here is left out,
// and the lab's values turn it off: Grafana (AGPL: its modules are not to
// be used), kube-state-metrics and node exporter (not built: nothing in the
// lab reads them), Alertmanager, and the admission webhook's certificate
// job (kube-webhook-certgen). The DCGM exporter needs NVIDIA's libdcgm: no
// image, so gpuMetrics is off, unless WithDCGMSimulator pushes the GPU
// simulator's stand-in.
//
// monitoring is gpukit's kube-prometheus-stack chart and statsd its statsd
// exporter image (pkg/kubeflow's MonitoringChart and StatsdImage: that
// package's tests use this one).
func PlatformImages(t testing.TB, chartsDir string, monitoring charts.Chart, statsd string) (images []Image, prometheusVersion string) {
	t.Helper()
	ch, err := charts.Source(chartsDir).Load(t.Context(), monitoring)
	if err != nil {
		t.Fatal(err)
	}
	set := Build(t, "platform")
	v := runtimeVersions(t, set)
	operator := v["prometheus-operator"]
	if operator != ch.Metadata.AppVersion {
		t.Fatalf("%s/versions: prometheus-operator %s, but chart %s runs %s: build the chart's (test/k8s/platform/operator/go.mod)",
			set, operator, monitoring.Name, ch.Metadata.AppVersion)
	}
	prometheusVersion = prometheusOf(t, set, v["prometheus"])
	bin := func(ref, file, at string) Image {
		return Image{Ref: ref, Upstream: ref, Files: map[string]string{at: filepath.Join(set, file)}, Entrypoint: []string{at}}
	}
	images = []Image{
		bin("quay.io/prometheus-operator/prometheus-operator:"+operator, "prometheus-operator", "/bin/operator"),
		bin("quay.io/prometheus-operator/prometheus-config-reloader:"+operator, "prometheus-config-reloader", "/bin/prometheus-config-reloader"),
		bin("quay.io/prometheus/prometheus:"+prometheusVersion, "prometheus", "/bin/prometheus"),
		bin(statsd, "statsd_exporter", "/bin/statsd_exporter"),
	}
	if tag := "v" + strings.TrimPrefix(v["statsd_exporter"], "v"); !strings.HasSuffix(statsd, ":"+tag) {
		t.Fatalf("gpukit runs %s, the build is statsd_exporter %s", statsd, tag)
	}
	return images, prometheusVersion
}

// prometheusOf is the Prometheus release of the module version the set
// built: the module's v0.3XY.Z is Prometheus v3.XY.Z.
func prometheusOf(t testing.TB, set, module string) string {
	t.Helper()
	minor, patch, ok := strings.Cut(strings.TrimPrefix(module, "v0.3"), ".")
	if !ok || len(minor) != 2 {
		t.Fatalf("%s/versions: prometheus %q is not a module version v0.3XY.Z", set, module)
	}
	return "v3." + strings.TrimPrefix(minor, "0") + "." + patch
}

// LabMonitoring is spec.addons.monitoring for a lab cluster whose registry
// holds PlatformImages: the stack on, with the components that have no
// image turned off through the inventory's values, Prometheus at
// prometheusVersion (the chart's CR takes its version from the tag), scraping every 5 s (tests wait for samples), the
// operator without its TLS (its certificate comes from the job left out);
// gpuMetrics is that key's YAML (flow style), "" for off; grafana turns
// Grafana on where the registry holds its stand-in (WithIngress).
func LabMonitoring(prometheusVersion, gpuMetrics string, grafana bool) string {
	if gpuMetrics == "" {
		gpuMetrics = "{enabled: false}"
	}
	return fmt.Sprintf(`enabled: true
values:
  grafana: {enabled: %t}
  alertmanager: {enabled: false}
  kubeStateMetrics: {enabled: false}
  nodeExporter: {enabled: false}
  prometheusOperator:
    admissionWebhooks: {enabled: false}
    tls: {enabled: false}
  prometheus:
    prometheusSpec:
      image: {tag: %s}
      scrapeInterval: 5s
gpuMetrics: %s
`, grafana, prometheusVersion, gpuMetrics)
}

// WithPlatform pushes PlatformImages to l's registry as quay.io's and
// docker.io's mirror and returns the site with its inventories' monitoring
// on (LabMonitoring).
func (s Site) WithPlatform(t testing.TB, l *lab.Lab, monitoring charts.Chart, statsd string) Site {
	t.Helper()
	if s.Charts == "" {
		t.Skip("no chart archives (`make fixtures` puts them in .fixtures/charts): no monitoring chart to install")
	}
	began := time.Now()
	images, prom := PlatformImages(t, s.Charts, monitoring, statsd)
	Mirror(t, l, images...)
	t.Logf("the platform's %d images (prometheus-operator, its config reloader, Prometheus %s, the statsd exporter) pushed to the lab registry in %s",
		len(images), prom, time.Since(began).Round(time.Millisecond))
	s.prometheus = prom
	s.Monitoring = LabMonitoring(prom, "", s.grafana)
	return s
}

// Mirror pushes images to l's registry under their public names
// (Upstream: registry/repository:tag), where a site's nodes find them
// through spec.mirrors.registry.
func Mirror(t testing.TB, l *lab.Lab, images ...Image) {
	t.Helper()
	PushImages(t, images, func(img Image) string { return mirrorPath + "/" + img.Upstream }, l.PushImage)
}

// WithDCGMSimulator pushes the GPU SIMULATOR's dcgm-exporter (bin, built
// from test/gpusim/cmd/dcgm-exporter; it replays capture, a real exporter's
// scrape, with each node's GPUs uuids[node]) to l's registry as the image chart
// (gpukit's dcgm-exporter chart) runs, under nvcr.io's mirror, and turns
// the site's gpuMetrics on: the real chart's DaemonSet, Service and
// ServiceMonitor on the GPU nodes, the exporter a stand-in. After
// WithPlatform.
func (s Site) WithDCGMSimulator(t testing.TB, l *lab.Lab, chart charts.Chart, bin, capture string, uuids map[string][]string) Site {
	t.Helper()
	if s.prometheus == "" {
		t.Fatal("WithDCGMSimulator: the site has no monitoring (WithPlatform first)")
	}
	ch, err := charts.Source(s.Charts).Load(t.Context(), chart)
	if err != nil {
		t.Fatal(err)
	}
	img, _ := ch.Values["image"].(map[string]any)
	repo, _ := img["repository"].(string)
	tag, _ := img["tag"].(string)
	if repo == "" || tag == "" {
		t.Fatalf("chart %s names no image (repository %q, tag %q)", chart.Name, repo, tag)
	}
	ref := repo + ":" + tag
	Mirror(t, l, Image{Ref: ref, Upstream: ref, Files: map[string]string{"/bin/dcgm-exporter": bin, "/etc/gpusim/dcgm.prom": capture},
		Entrypoint: []string{"/bin/dcgm-exporter"}})
	var spec []string
	for _, node := range slices.Sorted(maps.Keys(uuids)) {
		spec = append(spec, node+":"+strings.Join(uuids[node], ","))
	}
	s.gpuMetrics = fmt.Sprintf("{enabled: true, values: {extraEnv: [{name: GPUSIM_UUIDS, value: %q}]}}", strings.Join(spec, " "))
	s.Monitoring = LabMonitoring(s.prometheus, s.gpuMetrics, s.grafana)
	return s
}

// WithIngress pushes the ingress's images to l's registry and turns the
// site's ingress on (spec.addons.ingress, the default domain: Traefik on
// the first control plane, the lab's lab-1), with Grafana in the monitoring
// stack for its route. After WithPlatform.
//   - Traefik is the real one, built from its module at the chart's
//     appVersion (test/k8s/build.sh traefik; two modules the proxy cannot
//     serve are stood in, test/k8s/traefik/tools.go says which and why).
//   - Grafana is the labelled STAND-IN (test/standins/grafana: Grafana is
//     AGPL, its modules not to be used), under the monitoring chart's
//     Grafana image; its sidecars (k8s-sidecar, which gather the
//     dashboards' and datasources' ConfigMaps into files no test reads
//     here) run pause.
func (s Site) WithIngress(t testing.TB, l *lab.Lab, traefik, monitoring charts.Chart) Site {
	t.Helper()
	if s.prometheus == "" {
		t.Fatal("WithIngress: the site has no monitoring (WithPlatform first)")
	}
	src := charts.Source(s.Charts)
	tr, err := src.Load(t.Context(), traefik)
	if err != nil {
		t.Fatal(err)
	}
	set := Build(t, "traefik")
	if v := runtimeVersions(t, set)["traefik"]; v != tr.Metadata.AppVersion {
		t.Fatalf("%s/versions: traefik %s, but chart %s %s runs %s: build the chart's (test/k8s/traefik/go.mod)", set, v, traefik.Name, traefik.Version, tr.Metadata.AppVersion)
	}
	mon, err := src.Load(t.Context(), monitoring)
	if err != nil {
		t.Fatal(err)
	}
	var grafanaRef, sidecarRef string
	for _, d := range mon.Dependencies() {
		if d.Name() != "grafana" {
			continue
		}
		img, _ := d.Values["image"].(map[string]any)
		grafanaRef = fmt.Sprintf("%v/%v:%s", img["registry"], img["repository"], d.Metadata.AppVersion)
		sc, _ := d.Values["sidecar"].(map[string]any)
		img, _ = sc["image"].(map[string]any)
		sidecarRef = fmt.Sprintf("%v/%v:%v", img["registry"], img["repository"], img["tag"])
	}
	if grafanaRef == "" || strings.Contains(grafanaRef+sidecarRef, "<nil>") {
		t.Fatalf("chart %s: no Grafana subchart with an image and a sidecar image (%q, %q)", monitoring.Name, grafanaRef, sidecarRef)
	}
	pause := filepath.Join(Build(t, ""), "pause")
	began := time.Now()
	traefikRef := "docker.io/library/traefik:" + tr.Metadata.AppVersion // the chart's docker.io/traefik, as containerd names it
	Mirror(t, l,
		Image{Ref: traefikRef, Upstream: traefikRef, Files: map[string]string{"/usr/local/bin/traefik": filepath.Join(set, "traefik")}, Entrypoint: []string{"/usr/local/bin/traefik"}},
		Image{Ref: grafanaRef, Upstream: grafanaRef, Files: map[string]string{"/usr/share/grafana/bin/grafana": GrafanaStandIn(t)}, Entrypoint: []string{"/usr/share/grafana/bin/grafana"}},
		Image{Ref: sidecarRef, Upstream: sidecarRef, Files: map[string]string{"/pause": pause}, Entrypoint: []string{"/pause"}})
	t.Logf("Traefik %s (built from its module), Grafana's stand-in as %s and pause as its sidecar %s pushed to the lab registry in %s",
		tr.Metadata.AppVersion, grafanaRef, sidecarRef, time.Since(began).Round(time.Millisecond))
	s.Ingress = "{enabled: true}"
	s.grafana = true
	s.Monitoring = LabMonitoring(s.prometheus, s.gpuMetrics, true)
	return s
}

// GrafanaStandIn builds the Grafana STAND-IN (test/standins/grafana; static,
// for an image) into a temporary directory of t and returns its path.
func GrafanaStandIn(t testing.TB) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "grafana")
	cmd := exec.CommandContext(t.Context(), "go", "build", "-trimpath", "-buildvcs=false", "-ldflags=-s -w", "-o", out,
		"github.com/gpukit/gpukit/test/standins/grafana")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if root, err := fixtures.Root(); err == nil { // in the module, whatever the test's working directory
		cmd.Dir = root
	}
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the Grafana stand-in: %v\n%s", err, b)
	}
	return out
}

// setMonitoring puts the site's spec.addons.monitoring into addons.
func (s Site) setMonitoring(addons *yaml.Node) error {
	var m yaml.Node
	if err := yaml.Unmarshal([]byte(s.Monitoring), &m); err != nil {
		return fmt.Errorf("spec.addons.monitoring: %w", err)
	}
	set(addons, "monitoring", m.Content[0])
	return nil
}

// SwarmPlatformImages pushes the swarm platform's images to l's registry
// under the bill of materials' names (the site's spec.mirrors.registry
// then names them, as Docker mirrors only Docker Hub), what runs real and
// what stands in labelled as on Kubernetes:
//   - real, built from Go modules: Traefik at the traefik chart's
//     appVersion (test/k8s/build.sh traefik), Prometheus, node exporter and
//     the statsd exporter (build.sh platform), each checked against the
//     bill's tag;
//   - Grafana's STAND-IN (test/standins/grafana: AGPL) and the GPU
//     SIMULATOR's dcgm-exporter (dcgmExporter, replaying capture).
func SwarmPlatformImages(t testing.TB, l *lab.Lab, dcgmExporter, capture string) {
	t.Helper()
	began := time.Now()
	ref := func(name string) string { return manifests.Bill().Image(name).Ref }
	tr, plat := Build(t, "traefik"), Build(t, "platform")
	built := runtimeVersions(t, plat)
	maps.Copy(built, runtimeVersions(t, tr))
	prom := prometheusOf(t, plat, built["prometheus"])
	for name, v := range map[string]string{"traefik": built["traefik"], "prometheus": prom, "node-exporter": built["node_exporter"], "statsd-exporter": built["statsd_exporter"]} {
		if _, tag, _ := strings.Cut(ref(name), ":"); tag != v && !strings.HasPrefix(tag, v+"-") {
			t.Fatalf("the bill's %s is %s; the lab builds %s (test/k8s/build.sh)", name, ref(name), v)
		}
	}
	bin := func(name, file, at string, args ...string) Image {
		return Image{Ref: ref(name), Upstream: ref(name), Files: map[string]string{at: file}, Entrypoint: append([]string{at}, args...)}
	}
	Mirror(t, l,
		bin("traefik", filepath.Join(tr, "traefik"), "/usr/local/bin/traefik"),
		bin("prometheus", filepath.Join(plat, "prometheus"), "/bin/prometheus"),
		bin("node-exporter", filepath.Join(plat, "node_exporter"), "/bin/node_exporter"),
		bin("statsd-exporter", filepath.Join(plat, "statsd_exporter"), "/bin/statsd_exporter"),
		bin("grafana", GrafanaStandIn(t), "/usr/share/grafana/bin/grafana"),
		Image{Ref: ref("dcgm-exporter"), Upstream: ref("dcgm-exporter"), Files: map[string]string{"/bin/dcgm-exporter": dcgmExporter, "/etc/gpusim/dcgm.prom": capture},
			Entrypoint: []string{"/bin/dcgm-exporter"}},
	)
	t.Logf("the swarm platform's 6 images (Traefik, Prometheus, node exporter, the statsd exporter built; Grafana's stand-in, the simulator's DCGM exporter) pushed to the lab registry in %s",
		time.Since(began).Round(time.Millisecond))
}

// MirrorRegistry is spec.mirrors.registry for l's registry as the public
// registries' mirror (where Mirror pushes).
func MirrorRegistry(t testing.TB, l *lab.Lab) string {
	t.Helper()
	return "http://" + l.Registry(t) + "/" + mirrorPath
}

// WriteSwarmInventory writes the lab inventory src to dst as a swarm (its
// first host the manager) with the platform on (the addons' defaults) and
// registry (MirrorRegistry) as its registry mirror.
func WriteSwarmInventory(src, dst, registry string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	s := strings.Replace(string(b), "\nspec:\n", "\nspec:\n  orchestrator: swarm\n", 1)
	s = strings.Replace(s, "roles: [control-plane]", "roles: [manager]", 1)
	s = strings.Replace(s, "\n  mirrors:\n", "\n  mirrors:\n    registry: "+registry+"\n", 1)
	if !strings.Contains(s, "registry: "+registry) || !strings.Contains(s, "roles: [manager]") || !strings.Contains(s, "orchestrator: swarm") {
		return fmt.Errorf("%s: no spec, spec.mirrors or control plane to make a swarm site of", src)
	}
	return os.WriteFile(dst, []byte(s), 0o644)
}
