package kubeflow

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/kustomize/kyaml/kio"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/gpukit/gpukit/pkg/charts"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/pki"
	"github.com/gpukit/gpukit/test/fixtures"
	"github.com/gpukit/gpukit/test/golden"
)

// site is the platform of an inventory with spec and hosts; of a cluster
// gpukit did not build (no inventory) when hosts is "".
func site(t *testing.T, spec, hosts string) Site {
	t.Helper()
	if hosts == "" {
		return Site{}
	}
	inv, err := inventory.Parse("cluster.yaml", []byte("apiVersion: gpukit.dev/v1alpha1\nkind: Cluster\nmetadata: {name: t}\nspec:\n  orchestrator: kubernetes\n"+spec+"  hosts:"+hosts+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	return SiteOf(inv)
}

type siteCase struct{ name, spec, hosts string }

var siteCases = []siteCase{
	{"ingress-host", "", `
    - {name: cp-1, address: 10.0.0.1, roles: [control-plane]}
    - {name: edge-1, address: 10.0.0.5, roles: [worker, ingress]}
    - {name: gpu-1, address: 10.0.0.11, roles: [worker]}`},
	// No ingress host: Traefik on the first control plane, whose address
	// names the default domain.
	{"control-plane-ingress", "  kubernetes: {containerd: {nvidiaRuntime: runtimeClass}}\n", `
    - {name: cp-1, address: 10.0.0.1, roles: [control-plane]}
    - {name: gpu-1, address: 10.0.0.11, roles: [worker]}`},
	{"nfs-custom-domain", "  addons: {ingress: {domain: ml.example.com}, storage: {type: nfs, nfs: {server: 10.0.0.2, path: /export/k8s}}}\n", `
    - {name: cp-1, address: 10.0.0.1, roles: [control-plane]}`},
	{"all-off", "  addons: {ingress: {enabled: false}, monitoring: {enabled: false}, storage: {type: none}}\n", `
    - {name: cp-1, address: 10.0.0.1, roles: [control-plane]}`},
	// The inventory's values over gpukit's: a map merges key by key (the
	// redirection stays beside the new access log), a scalar replaces
	// gpukit's; no DCGM exporter.
	{"site-values", `  addons:
    ingress:
      values:
        ports: {web: {hostPort: 8080}}
        accessLog: {enabled: true}
    monitoring:
      values:
        grafana: {enabled: false}
        alertmanager: {enabled: false}
        prometheus: {prometheusSpec: {image: {tag: v3.16.0}}}
      gpuMetrics: {enabled: false}
    storage:
      values: {storageClass: {defaultClass: false}}
`, `
    - {name: cp-1, address: 10.0.0.1, roles: [control-plane]}`},
	// A cluster gpukit did not build: no hosts, Traefik behind the
	// cluster's load balancer.
	{"no-inventory", "", ""},
}

// The releases and their values for each kind of site, as golden files.
func TestSiteReleases(t *testing.T) {
	for _, tc := range siteCases {
		t.Run(tc.name, func(t *testing.T) {
			b, err := sigsyaml.Marshal(site(t, tc.spec, tc.hosts).Releases())
			if err != nil {
				t.Fatal(err)
			}
			golden.Assert(t, filepath.Join("testdata", "releases", tc.name+".yaml"), b)
		})
	}
}

// Each release renders from the real chart (its values schema checks the
// values), as the cluster will get it: Traefik a DaemonSet on the ingress
// hosts' ports 80 and 443; local-path the default StorageClass; Grafana's
// login from gpukit's secret; the DCGM exporter's ServiceMonitor labelled
// for the monitoring release's Prometheus, its pods on the GPU nodes,
// through RuntimeClass nvidia where that is how GPUs are reached.
func TestReleasesRenderFromTheFixtureCharts(t *testing.T) {
	src := charts.Source(fixtures.Dir(t, "charts"))
	for _, tc := range siteCases[:2] {
		t.Run(tc.name, func(t *testing.T) {
			objs, _ := renderReleases(t, src, site(t, tc.spec, tc.hosts))
			has := func(key string, wants ...string) { t.Helper(); renderedWith(t, objs, key, wants...) }
			selector := "gpukit.dev/ingress: \"true\""
			if tc.name == "control-plane-ingress" {
				selector = "kubernetes.io/hostname: cp-1"
			}
			has("DaemonSet/traefik", selector, "hostPort: 80", "hostPort: 443", "key: node-role.kubernetes.io/control-plane", "--entryPoints.web.http.redirections.entryPoint.scheme=https")
			has("IngressClass/traefik", `ingressclass.kubernetes.io/is-default-class: "true"`)
			has("StorageClass/local-path", `storageclass.kubernetes.io/is-default-class: "true"`)
			has("Deployment/kube-prometheus-stack-grafana", "name: gpukit-grafana-admin", "key: admin-password")
			has("ServiceMonitor/dcgm-exporter", "release: kube-prometheus-stack")
			has("Prometheus/kube-prometheus-stack-prometheus", "serviceMonitorSelector:\n    matchLabels:\n      release: \"kube-prometheus-stack\"")
			has("DaemonSet/dcgm-exporter", "nvidia.com/gpu.present: \"true\"")
			if tc.name == "control-plane-ingress" {
				has("DaemonSet/dcgm-exporter", "runtimeClassName: nvidia")
			}
		})
	}
}

// The inventory's values reach the charts: components it turns off are
// not rendered, its image tag is the one Prometheus runs, and gpukit's
// values it does not name stay.
func TestSiteValuesRenderFromTheFixtureCharts(t *testing.T) {
	src := charts.Source(fixtures.Dir(t, "charts"))
	i := slices.IndexFunc(siteCases, func(c siteCase) bool { return c.name == "site-values" })
	tc := siteCases[i]
	objs, names := renderReleases(t, src, site(t, tc.spec, tc.hosts))
	if got := strings.Join(names, " "); got != "local-path-provisioner traefik kube-prometheus-stack" {
		t.Errorf("releases %s, want no dcgm-exporter", got)
	}
	for _, k := range []string{"Deployment/kube-prometheus-stack-grafana", "Alertmanager/kube-prometheus-stack-alertmanager"} {
		if _, ok := objs[k]; ok {
			t.Errorf("%s rendered; the inventory turned it off", k)
		}
	}
	for key, wants := range map[string][]string{
		"Prometheus/kube-prometheus-stack-prometheus": {`image: "quay.io/prometheus/prometheus:v3.16.0"`},
		"DaemonSet/traefik":                           {"hostPort: 8080", "--accesslog=true", "--entryPoints.web.http.redirections.entryPoint.scheme=https"},
		"StorageClass/local-path":                     {`storageclass.kubernetes.io/is-default-class: "false"`},
	} {
		renderedWith(t, objs, key, wants...)
	}
}

// renderedWith checks that objs holds key, its YAML containing each want.
func renderedWith(t *testing.T, objs map[string]string, key string, wants ...string) {
	t.Helper()
	y, ok := objs[key]
	if !ok {
		t.Errorf("no %s rendered", key)
		return
	}
	for _, w := range wants {
		if !strings.Contains(y, w) {
			t.Errorf("%s lacks %q:\n%s", key, w, y)
		}
	}
}

// renderReleases renders the site's releases from the charts in src: the
// objects by kind/name (their YAML) and the releases' names.
func renderReleases(t *testing.T, src charts.Source, s Site) (map[string]string, []string) {
	t.Helper()
	objs := map[string]string{}
	var names []string
	for _, r := range s.Releases() {
		names = append(names, r.Name)
		ch, err := src.Load(context.Background(), r.Chart)
		if err != nil {
			t.Fatal(err)
		}
		m, err := charts.Render(context.Background(), r, ch, "v1.37.2", "monitoring.coreos.com/v1")
		if err != nil {
			t.Fatalf("%s: %v", r.Name, err)
		}
		nodes, err := kio.FromBytes([]byte(m))
		if err != nil {
			t.Fatalf("%s: %v", r.Name, err)
		}
		for _, n := range nodes {
			objs[n.GetKind()+"/"+n.GetName()] = n.MustString()
		}
	}
	return objs, names
}

func TestWithValues(t *testing.T) {
	base := map[string]any{"a": map[string]any{"x": 1, "y": 2}, "b": "keep", "c": []any{1}}
	for _, tc := range []struct {
		name string
		over inventory.Values
		want string
	}{
		{"none", nil, `{"a":{"x":1,"y":2},"b":"keep","c":[1]}`},
		{"map merges", inventory.Values{"a": map[string]any{"y": 3, "z": 4}}, `{"a":{"x":1,"y":3,"z":4},"b":"keep","c":[1]}`},
		{"scalar replaces map", inventory.Values{"a": false}, `{"a":false,"b":"keep","c":[1]}`},
		{"list replaces", inventory.Values{"c": []any{2, 3}}, `{"a":{"x":1,"y":2},"b":"keep","c":[2,3]}`},
		{"null stays for Helm", inventory.Values{"b": nil, "d": nil}, `{"a":{"x":1,"y":2},"b":null,"c":[1],"d":null}`},
		{"new key", inventory.Values{"e": map[string]any{"f": "g"}}, `{"a":{"x":1,"y":2},"b":"keep","c":[1],"e":{"f":"g"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, _ := json.Marshal(base)
			got, err := json.Marshal(withValues(base, tc.over))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("withValues = %s, want %s", got, tc.want)
			}
			if after, _ := json.Marshal(base); string(after) != string(before) {
				t.Errorf("withValues changed its base: %s", after)
			}
		})
	}
}

// The routes of each kind of site, rendered, as golden files.
func TestRouteObjects(t *testing.T) {
	for _, tc := range siteCases {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := RouteObjects(site(t, tc.spec, tc.hosts).Routes(true))
			if err != nil {
				t.Fatal(err)
			}
			out, err := kio.StringAll(objs)
			if err != nil {
				t.Fatal(err)
			}
			golden.AssertString(t, filepath.Join("testdata", "routes", tc.name+".yaml"), out)
		})
	}
}

// The self-signed certificate names the domain and every name under it; a
// certificate is kept while it does and stays valid a month.
func TestCertificate(t *testing.T) {
	now := time.Now()
	cert, key, err := pki.IngressCertificate("10.0.0.5.nip.io", now)
	if err != nil || !bytes.Contains(key, []byte("EC PRIVATE KEY")) {
		t.Fatal(err)
	}
	if _, err := tls.X509KeyPair(cert, key); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		domain string
		at     time.Time
		want   bool
	}{
		{"10.0.0.5.nip.io", now, true},
		{"10.0.0.6.nip.io", now, false},
		{"10.0.0.5.nip.io", now.Add(2*365*24*time.Hour - 29*24*time.Hour), false},
	} {
		if got := pki.CoversDomain(cert, tc.domain, tc.at); got != tc.want {
			t.Errorf("covers(%s, %s) = %v", tc.domain, tc.at, got)
		}
	}
}
