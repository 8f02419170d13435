package charts

import (
	"context"
	"errors"
	"io"
	"reflect"
	"strings"
	"sync"
	"testing"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	kubefake "helm.sh/helm/v3/pkg/kube/fake"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"

	"github.com/gpukit/gpukit/pkg/kube"
)

// memCluster is a cluster without an API server: namespaces in a fake
// clientset, Helm's releases in its in-memory storage (one per namespace,
// as the Secrets driver keeps them), the objects of a release sent to
// Helm's fake kube client (which fails as told).
type memCluster struct {
	cs   *fake.Clientset
	kube *kubefake.FailingKubeClient

	mu   sync.Mutex
	cfgs map[string]*action.Configuration
}

func newMemCluster(t *testing.T, objs ...runtime.Object) (*Client, *memCluster) {
	t.Helper()
	m := &memCluster{
		cs:   fake.NewClientset(objs...),
		kube: &kubefake.FailingKubeClient{PrintingKubeClient: kubefake.PrintingKubeClient{Out: io.Discard}},
		cfgs: map[string]*action.Configuration{},
	}
	c := NewClient(&kube.Client{Config: &rest.Config{Host: "https://127.0.0.1:1"}, Clientset: m.cs}, t.Logf)
	c.helm = func(namespace string) (*action.Configuration, error) { return m.action(namespace), nil }
	return c, m
}

func (m *memCluster) action(namespace string) *action.Configuration {
	m.mu.Lock()
	defer m.mu.Unlock()
	if cfg, ok := m.cfgs[namespace]; ok {
		return cfg
	}
	mem := driver.NewMemory()
	mem.SetNamespace(namespace)
	cfg := &action.Configuration{
		Releases:     storage.Init(mem),
		KubeClient:   m.kube,
		Capabilities: chartutil.DefaultCapabilities,
		Log:          func(string, ...any) {},
	}
	m.cfgs[namespace] = cfg
	return cfg
}

// record stores a release as Helm would have (a run interrupted, a chart
// without metadata).
func (m *memCluster) record(t *testing.T, rel *release.Release) {
	t.Helper()
	if err := m.action(rel.Namespace).Releases.Create(rel); err != nil {
		t.Fatal(err)
	}
}

// history is the release's revisions and their statuses, oldest first.
func (m *memCluster) history(t *testing.T, namespace, name string) []string {
	t.Helper()
	rels, err := m.action(namespace).Releases.History(name)
	if errors.Is(err, driver.ErrReleaseNotFound) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(rels))
	for i, r := range rels {
		out[i] = r.Info.Status.String()
	}
	return out
}

func namespace(name string, labels map[string]string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

// webRelease is the release of testChart("web", version) in ns-web with values.
func webRelease(version string, values map[string]any) Release {
	return Release{Name: "web", Namespace: "ns-web", Chart: Chart{Name: "web", Version: version}, Values: values}
}

// Pending's decision: what an installed release lacks, compared with the
// wanted one - its status, its chart's version, the values it was given
// (as Helm stores them: equal values from other Go types are equal), its
// namespace and the namespace's labels.
func TestPending(t *testing.T) {
	installed := map[string]any{"data": map[string]any{"greeting": "hi"}, "replicas": 3, "tolerations": []any{"gpu"}}
	privileged := map[string]string{"pod-security.kubernetes.io/enforce": "privileged"}
	for _, tc := range []struct {
		name    string
		setup   func(t *testing.T, c *Client, m *memCluster) // after ns-web exists
		noNS    bool                                         // ns-web does not exist
		want    Release
		wantWhy string
		wantErr string
	}{
		{name: "not installed", want: webRelease("1.0.0", installed), wantWhy: "release ns-web/web is not installed"},
		{name: "installed as wanted", setup: install("1.0.0", installed), want: webRelease("1.0.0", installed)},
		{name: "the same values from other Go types", setup: install("1.0.0", installed),
			want: webRelease("1.0.0", map[string]any{"data": map[string]string{"greeting": "hi"}, "replicas": 3.0, "tolerations": []string{"gpu"}})},
		{name: "no values and empty values", setup: install("1.0.0", nil), want: webRelease("1.0.0", map[string]any{})},
		{name: "another chart version", setup: install("1.0.0", installed), want: webRelease("1.1.0", installed),
			wantWhy: "release web runs chart web 1.0.0, not 1.1.0"},
		{name: "the version upgraded from", setup: func(t *testing.T, c *Client, m *memCluster) {
			install("1.0.0", installed)(t, c, m)
			install("1.1.0", installed)(t, c, m)
		}, want: webRelease("1.0.0", installed), wantWhy: "release web runs chart web 1.1.0, not 1.0.0"},
		{name: "a value changed", setup: install("1.0.0", installed),
			want:    webRelease("1.0.0", map[string]any{"data": map[string]any{"greeting": "hello"}, "replicas": 3, "tolerations": []any{"gpu"}}),
			wantWhy: "release web's values are not as wanted"},
		{name: "a value added", setup: install("1.0.0", installed),
			want:    webRelease("1.0.0", map[string]any{"data": map[string]any{"greeting": "hi"}, "replicas": 3, "tolerations": []any{"gpu"}, "debug": false}),
			wantWhy: "release web's values are not as wanted"},
		{name: "a value removed", setup: install("1.0.0", installed),
			want:    webRelease("1.0.0", map[string]any{"data": map[string]any{"greeting": "hi"}, "replicas": 3}),
			wantWhy: "release web's values are not as wanted"},
		{name: "a list reordered", setup: install("1.0.0", map[string]any{"tolerations": []any{"a", "b"}}),
			want: webRelease("1.0.0", map[string]any{"tolerations": []any{"b", "a"}}), wantWhy: "release web's values are not as wanted"},
		// The values given are compared, not the chart's defaults merged in:
		// asking for a default the release was not given is a change.
		{name: "a chart default given explicitly", setup: install("1.0.0", nil),
			want: webRelease("1.0.0", map[string]any{"data": map[string]any{"greeting": "hello"}}), wantWhy: "release web's values are not as wanted"},
		{name: "a failed install", setup: func(t *testing.T, c *Client, m *memCluster) {
			m.kube.WaitError = errors.New("timed out waiting for the condition")
			defer func() { m.kube.WaitError = nil }()
			r := webRelease("1.0.0", installed)
			r.Wait = true
			if err := c.Apply(context.Background(), r, testChart("web", "1.0.0")); err == nil {
				t.Fatal("the install did not fail")
			}
		}, want: webRelease("1.0.0", installed), wantWhy: "release web is failed"},
		{name: "an install interrupted", setup: func(t *testing.T, c *Client, m *memCluster) {
			m.record(t, &release.Release{Name: "web", Namespace: "ns-web", Version: 1, Config: installed,
				Chart: testChart("web", "1.0.0"), Info: &release.Info{Status: release.StatusPendingInstall}})
		}, want: webRelease("1.0.0", installed), wantWhy: "release web is pending-install"},
		{name: "a record without its chart", setup: func(t *testing.T, c *Client, m *memCluster) {
			m.record(t, &release.Release{Name: "web", Namespace: "ns-web", Version: 1, Config: installed, Info: &release.Info{Status: release.StatusDeployed}})
		}, want: webRelease("1.0.0", installed), wantWhy: "release web runs chart web ?, not 1.0.0"},
		{name: "the namespace lacks a label", setup: install("1.0.0", installed),
			want:    Release{Name: "web", Namespace: "ns-web", Chart: Chart{Name: "web", Version: "1.0.0"}, Values: installed, NamespaceLabels: privileged},
			wantWhy: "namespace ns-web lacks label pod-security.kubernetes.io/enforce=privileged"},
		{name: "the namespace has its labels", setup: func(t *testing.T, c *Client, m *memCluster) {
			install("1.0.0", installed)(t, c, m)
			ns, _ := m.cs.CoreV1().Namespaces().Get(context.Background(), "ns-web", metav1.GetOptions{})
			ns.Labels = map[string]string{"pod-security.kubernetes.io/enforce": "privileged", "team": "ml"}
			if _, err := m.cs.CoreV1().Namespaces().Update(context.Background(), ns, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}, want: Release{Name: "web", Namespace: "ns-web", Chart: Chart{Name: "web", Version: "1.0.0"}, Values: installed, NamespaceLabels: privileged}},
		{name: "the namespace is missing", noNS: true, setup: func(t *testing.T, c *Client, m *memCluster) {
			m.record(t, &release.Release{Name: "web", Namespace: "ns-web", Version: 1, Config: installed,
				Chart: testChart("web", "1.0.0"), Info: &release.Info{Status: release.StatusDeployed}})
		}, want: webRelease("1.0.0", installed), wantWhy: "namespace ns-web is missing"},
		{name: "values JSON cannot hold", setup: install("1.0.0", installed),
			want: webRelease("1.0.0", map[string]any{"hook": func() {}}), wantErr: "json: unsupported type: func()"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var objs []runtime.Object
			if !tc.noNS {
				objs = append(objs, namespace("ns-web", nil))
			}
			c, m := newMemCluster(t, objs...)
			if tc.setup != nil {
				tc.setup(t, c, m)
			}
			why, err := c.Pending(context.Background(), tc.want)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || why != tc.wantWhy {
				t.Errorf("Pending = %q, %v; want %q", why, err, tc.wantWhy)
			}
		})
	}
}

// install is a setup that applies web at version with values.
func install(version string, values map[string]any) func(t *testing.T, c *Client, m *memCluster) {
	return func(t *testing.T, c *Client, m *memCluster) {
		t.Helper()
		if err := c.Apply(context.Background(), webRelease(version, values), testChart("web", version)); err != nil {
			t.Fatal(err)
		}
	}
}

// Apply installs a release the first time (its namespace created with its
// labels), upgrades it after (the namespace's labels added, the others
// kept), keeps 10 revisions, and takes a failed install over on the next
// run; Deployed reports what the cluster runs.
func TestApply(t *testing.T) {
	ctx := context.Background()
	c, m := newMemCluster(t)
	r := Release{Name: "web", Namespace: "ns-web", Chart: Chart{Name: "web", Version: "1.0.0"},
		Values: map[string]any{"data": map[string]any{"greeting": "hi"}}, NamespaceLabels: map[string]string{"a": "1"}}

	if v, status, err := c.Deployed(r); err != nil || v != "" || status != "not installed" {
		t.Fatalf("Deployed before the install: %q %q %v", v, status, err)
	}
	if err := c.Apply(ctx, r, testChart("web", "1.0.0")); err != nil {
		t.Fatal(err)
	}
	ns, err := m.cs.CoreV1().Namespaces().Get(ctx, "ns-web", metav1.GetOptions{})
	if err != nil || !reflect.DeepEqual(ns.Labels, map[string]string{"a": "1"}) {
		t.Fatalf("namespace %+v %v", ns, err)
	}
	if v, status, err := c.Deployed(r); err != nil || v != "1.0.0" || status != "deployed" {
		t.Errorf("Deployed: %q %q %v", v, status, err)
	}
	rel, err := m.action("ns-web").Releases.Last("web")
	if err != nil {
		t.Fatal(err)
	}
	if rel.Namespace != "ns-web" || !reflect.DeepEqual(rel.Config, map[string]any{"data": map[string]any{"greeting": "hi"}}) ||
		!strings.Contains(rel.Manifest, "greeting: \"hi\"") || !strings.Contains(rel.Manifest, "namespace: ns-web") {
		t.Errorf("release %s in %s, values %v, manifest:\n%s", rel.Name, rel.Namespace, rel.Config, rel.Manifest)
	}

	// The namespace gets a label of the user's; an upgrade adds gpukit's
	// new one and keeps it.
	ns.Labels["team"] = "ml"
	if _, err := m.cs.CoreV1().Namespaces().Update(ctx, ns, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	r.Chart.Version, r.NamespaceLabels["b"] = "1.1.0", "2"
	if why, _ := c.Pending(ctx, r); why != "release web runs chart web 1.0.0, not 1.1.0" {
		t.Errorf("Pending before the upgrade: %q", why)
	}
	if err := c.Apply(ctx, r, testChart("web", "1.1.0")); err != nil {
		t.Fatal(err)
	}
	if ns, _ := m.cs.CoreV1().Namespaces().Get(ctx, "ns-web", metav1.GetOptions{}); !reflect.DeepEqual(ns.Labels, map[string]string{"a": "1", "b": "2", "team": "ml"}) {
		t.Errorf("namespace labels after the upgrade: %v", ns.Labels)
	}
	if got := m.history(t, "ns-web", "web"); !reflect.DeepEqual(got, []string{"superseded", "deployed"}) {
		t.Errorf("history %v", got)
	}
	if why, err := c.Pending(ctx, r); why != "" || err != nil {
		t.Errorf("Pending after the upgrade: %q %v", why, err)
	}

	for range 12 {
		if err := c.Apply(ctx, r, testChart("web", "1.1.0")); err != nil {
			t.Fatal(err)
		}
	}
	if got := m.history(t, "ns-web", "web"); len(got) != 10 || got[9] != "deployed" {
		t.Errorf("%d revisions kept (%v), want 10", len(got), got)
	}
	if last, _ := m.action("ns-web").Releases.Last("web"); last.Version != 14 {
		t.Errorf("last revision %d, want 14", last.Version)
	}

	// Wait is Helm's: a release whose workloads are not ready in time is
	// failed, and the next run upgrades it.
	t.Run("a release not ready in time fails, the next run takes it over", func(t *testing.T) {
		c, m := newMemCluster(t)
		r := webRelease("1.0.0", nil)
		r.Wait = true
		m.kube.WaitError = errors.New("context deadline exceeded")
		err := c.Apply(ctx, r, testChart("web", "1.0.0"))
		if err == nil || !strings.HasPrefix(err.Error(), "release ns-web/web (chart web 1.0.0): ") || !strings.Contains(err.Error(), "context deadline exceeded") {
			t.Fatalf("install: error %v", err)
		}
		if v, status, err := c.Deployed(r); v != "1.0.0" || status != "failed" || err != nil {
			t.Errorf("Deployed after the failed install: %q %q %v", v, status, err)
		}
		m.kube.WaitError = nil
		if err := c.Apply(ctx, r, testChart("web", "1.0.0")); err != nil {
			t.Fatal(err)
		}
		if why, err := c.Pending(ctx, r); why != "" || err != nil {
			t.Errorf("Pending after the re-run: %q %v", why, err)
		}
		m.kube.WaitError = errors.New("context deadline exceeded")
		r.Chart.Version = "1.1.0"
		if err := c.Apply(ctx, r, testChart("web", "1.1.0")); err == nil || !strings.HasPrefix(err.Error(), "release ns-web/web (chart web 1.1.0): ") {
			t.Fatalf("upgrade: error %v", err)
		}
		if v, status, _ := c.Deployed(r); v != "1.1.0" || status != "failed" {
			t.Errorf("Deployed after the failed upgrade: %q %q", v, status)
		}
		if why, _ := c.Pending(ctx, r); why != "release web is failed" {
			t.Errorf("Pending after the failed upgrade: %q", why)
		}
		m.kube.WaitError = nil
		if err := c.Apply(ctx, r, testChart("web", "1.1.0")); err != nil {
			t.Fatal(err)
		}
		if got := m.history(t, "ns-web", "web"); !reflect.DeepEqual(got, []string{"superseded", "superseded", "failed", "deployed"}) {
			t.Errorf("history %v", got)
		}
		// Without Wait, Helm does not wait: the same not-ready workloads
		// do not fail the release.
		m.kube.WaitError = errors.New("context deadline exceeded")
		r.Wait = false
		if err := c.Apply(ctx, r, testChart("web", "1.1.0")); err != nil {
			t.Errorf("without Wait: %v", err)
		}
	})

	t.Run("values JSON cannot hold install nothing", func(t *testing.T) {
		c, m := newMemCluster(t)
		err := c.Apply(ctx, webRelease("1.0.0", map[string]any{"ch": make(chan int)}), testChart("web", "1.0.0"))
		if err == nil || !strings.Contains(err.Error(), "json: unsupported type: chan int") {
			t.Fatalf("error %v", err)
		}
		if got := m.history(t, "ns-web", "web"); len(got) != 0 {
			t.Errorf("history %v", got)
		}
	})
}

// normal makes values what Helm stores (their JSON form), so that Pending
// compares like with like.
func TestNormal(t *testing.T) {
	type toleration struct {
		Key    string `json:"key"`
		Effect string `json:"effect,omitempty"`
	}
	for _, tc := range []struct {
		name    string
		in      map[string]any
		want    map[string]any
		wantErr string
	}{
		{name: "nil", in: nil, want: map[string]any{}},
		{name: "empty", in: map[string]any{}, want: map[string]any{}},
		{name: "numbers are float64", in: map[string]any{"replicas": 3, "ratio": float32(0.5), "port": uint16(8080)},
			want: map[string]any{"replicas": 3.0, "ratio": 0.5, "port": 8080.0}},
		{name: "typed maps and slices", in: map[string]any{"labels": map[string]string{"a": "b"}, "args": []string{"--x"}, "none": []string(nil)},
			want: map[string]any{"labels": map[string]any{"a": "b"}, "args": []any{"--x"}, "none": nil}},
		{name: "structs through their JSON tags", in: map[string]any{"tolerations": []toleration{{Key: "nvidia.com/gpu"}}},
			want: map[string]any{"tolerations": []any{map[string]any{"key": "nvidia.com/gpu"}}}},
		{name: "a value JSON cannot hold", in: map[string]any{"f": func() {}}, wantErr: "json: unsupported type: func()"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := normal(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("normal = %#v, %v; want %#v", got, err, tc.want)
			}
		})
	}
}

// renderChart is testChart with more templates: a hook, a ServiceMonitor
// when monitoring.coreos.com/v1 is served, a CRD, a values schema and a
// Kubernetes version it needs.
func renderChart() *chart.Chart {
	ch := testChart("web", "1.0.0")
	ch.Metadata.KubeVersion = ">=1.30.0-0"
	ch.Templates = append(ch.Templates,
		&chart.File{Name: "templates/hook.yaml", Data: []byte(`apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-hook
  annotations: {"helm.sh/hook": post-install}
data: {kube: {{ .Capabilities.KubeVersion.Version | quote }}}
`)},
		&chart.File{Name: "templates/servicemonitor.yaml", Data: []byte(`{{- if .Capabilities.APIVersions.Has "monitoring.coreos.com/v1" }}
apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata: {name: {{ .Release.Name }}}
{{- end }}
`)})
	ch.Files = append(ch.Files, &chart.File{Name: "crds/widgets.yaml", Data: []byte(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
`)})
	ch.Schema = []byte(`{"type": "object", "properties": {"data": {"type": "object", "additionalProperties": {"type": "string"}}}}`)
	return ch
}

// Render is `helm template`: the templates with the release's values, hooks
// after them, no CRDs, the capabilities asked for, the chart's values schema
// and Kubernetes version enforced.
func TestRender(t *testing.T) {
	ctx := context.Background()
	r := Release{Name: "web", Namespace: "ns-web", Chart: Chart{Name: "web", Version: "1.0.0"}, Values: map[string]any{"data": map[string]any{"greeting": "hi"}}}
	if n := len(renderChart().CRDObjects()); n != 1 {
		t.Fatalf("the chart carries %d CRDs, want 1", n)
	}
	for _, tc := range []struct {
		name        string
		values      map[string]any
		kube        string
		apiVersions []string
		want        []string
		wantNot     []string
		wantErr     string
	}{
		{name: "templates, values and hooks", values: r.Values, kube: "v1.37.2",
			want: []string{"# Source: web/templates/configmap.yaml", "name: web\n  namespace: ns-web\ndata:\n  greeting: \"hi\"",
				"\n---\n# Source: web/templates/hook.yaml\n", "name: web-hook", `kube: "v1.37.2"`},
			wantNot: []string{"ServiceMonitor", "CustomResourceDefinition", "hello"}},
		{name: "the chart's defaults", kube: "v1.37.2", want: []string{`greeting: "hello"`}},
		{name: "an API version served", values: r.Values, kube: "v1.37.2", apiVersions: []string{"monitoring.coreos.com/v1"},
			want: []string{"kind: ServiceMonitor"}},
		{name: "a Kubernetes the chart does not support", values: r.Values, kube: "v1.29.4",
			wantErr: "release ns-web/web (chart web 1.0.0): chart requires kubeVersion: >=1.30.0-0 which is incompatible with Kubernetes v1.29.4"},
		{name: "a malformed Kubernetes version", values: r.Values, kube: "one-point-thirty", wantErr: "one-point-thirty"},
		{name: "values against the chart's schema", values: map[string]any{"data": map[string]any{"greeting": 5}}, kube: "v1.37.2",
			wantErr: "release ns-web/web (chart web 1.0.0): values don't meet the specifications of the schema(s)"},
		{name: "values JSON cannot hold", values: map[string]any{"f": func() {}}, kube: "v1.37.2", wantErr: "json: unsupported type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := r
			r.Values = tc.values
			out, err := Render(ctx, r, renderChart(), tc.kube, tc.apiVersions...)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("no %q in:\n%s", w, out)
				}
			}
			for _, w := range tc.wantNot {
				if strings.Contains(out, w) {
					t.Errorf("%q in:\n%s", w, out)
				}
			}
		})
	}
}
