package charts_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"

	"github.com/gpukit/gpukit/pkg/charts"
	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/engine/enginetest"
	"github.com/gpukit/gpukit/pkg/event"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/kube"
	"github.com/gpukit/gpukit/test/cluster"
)

// widgetsChart is a chart with a CRD (crds/: Widget, whose schema gains a
// color field in 1.1.0), a Widget and a ConfigMap of .Values.data.
func widgetsChart(version string) *chart.Chart {
	props := "size: {type: integer}"
	if version != "1.0.0" {
		props += ", color: {type: string}"
	}
	return &chart.Chart{
		Metadata: &chart.Metadata{APIVersion: chart.APIVersionV2, Name: "widgets", Version: version, Type: "application"},
		Templates: []*chart.File{
			{Name: "templates/configmap.yaml", Data: []byte(`apiVersion: v1
kind: ConfigMap
metadata: {name: {{ .Release.Name }}-settings}
data:
{{- range $k, $v := .Values.data }}
  {{ $k }}: {{ $v | quote }}
{{- end }}
`)},
			{Name: "templates/widget.yaml", Data: []byte(`apiVersion: example.gpukit.dev/v1
kind: Widget
metadata: {name: first}
spec: {size: 3}
`)},
		},
		Files: []*chart.File{{Name: "crds/widgets.yaml", Data: []byte(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.gpukit.dev}
spec:
  group: example.gpukit.dev
  names: {kind: Widget, plural: widgets, singular: widget}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {` + props + `}}
`)}},
		Values: map[string]any{"data": map[string]any{"greeting": "hello"}},
	}
}

// A release through the Helm SDK on a real API server (the releases kept
// as Secrets, as on a cluster gpukit built), through the phase as the
// kubeadm layer and the platform run it: a plan changes nothing; the
// install creates the labelled namespace, applies the chart's CRD
// server-side before its Widget, and is then left alone; new values, a new
// chart version (whose CRD changed: Helm alone never upgrades CRDs) and a
// namespace label taken away each make it pending and are applied; a
// release the API server rejects is failed, and Pending says so.
func TestReleasesOnARealAPIServer(t *testing.T) {
	cluster.Require(t)
	ctx := context.Background()
	c := cluster.Start(t, cluster.Options{})
	kc, err := os.ReadFile(c.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	api := &kube.Local{Kubeconfig: kc}
	k, err := api.Client(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	helm := charts.NewClient(k, t.Logf)
	dir := t.TempDir()
	src := charts.Source(dir)
	for _, ch := range []*chart.Chart{widgetsChart("1.0.0"), widgetsChart("1.1.0")} {
		if _, err := chartutil.Save(ch, dir); err != nil {
			t.Fatal(err)
		}
	}
	r := charts.Release{Name: "widgets", Namespace: "widgets", Chart: charts.Chart{Name: "widgets", Version: "1.0.0"},
		Values:          map[string]any{"data": map[string]any{"greeting": "hi"}},
		NamespaceLabels: map[string]string{"pod-security.kubernetes.io/enforce": "privileged"},
		Wait:            true, Timeout: time.Minute, CRDsServerSide: true}
	phase := func(r charts.Release) *charts.Phase {
		return &charts.Phase{ID: "platform/widgets", Description: "widgets", Release: r, Source: src, API: api,
			Target: func(hosts []*engine.Host) []*engine.Host { return hosts }}
	}
	// run runs the phase as the runner does: ShouldRun, then Run if it
	// says so; it returns the skip message ("" when it ran) and the events.
	run := func(t *testing.T, r charts.Release, dryRun bool) (string, *enginetest.Recorder) {
		t.Helper()
		rec := &enginetest.Recorder{}
		h := engine.NewHost(inventory.Machine{Name: "cp-1"}, nil, engine.HostOptions{DryRun: dryRun, Sink: rec, Phase: "platform/widgets"})
		p := phase(r)
		ok, skip, err := p.ShouldRun(ctx, h)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return skip, rec
		}
		if err := p.Run(ctx, h); err != nil {
			t.Fatal(err)
		}
		return "", rec
	}
	pending := func(t *testing.T, r charts.Release, want string) {
		t.Helper()
		if why, err := helm.Pending(ctx, r); why != want || err != nil {
			t.Errorf("Pending = %q, %v; want %q", why, err, want)
		}
	}

	pending(t, r, "release widgets/widgets is not installed")
	t.Run("a plan changes nothing", func(t *testing.T) {
		_, rec := run(t, r, true)
		if p := rec.OfType(event.Planned); len(p) != 1 || p[0].Message != "helm install or upgrade widgets/widgets from chart widgets 1.0.0 (release widgets/widgets is not installed)" {
			t.Errorf("planned %+v", p)
		}
		if out, err := c.TryKubectl("get", "namespace", "widgets"); err == nil {
			t.Errorf("the plan created the namespace: %s", out)
		}
		if out, err := c.TryKubectl("get", "crd", "widgets.example.gpukit.dev"); err == nil {
			t.Errorf("the plan created the CRD: %s", out)
		}
	})

	t.Run("install, then left alone", func(t *testing.T) {
		if skip, _ := run(t, r, false); skip != "" {
			t.Fatalf("skipped: %s", skip)
		}
		if got := c.Kubectl(t, "get", "namespace", "widgets", "-o", `jsonpath={.metadata.labels.pod-security\.kubernetes\.io/enforce}`); got != "privileged" {
			t.Errorf("namespace label %q", got)
		}
		if got := c.Kubectl(t, "get", "crd", "widgets.example.gpukit.dev", "-o", `jsonpath={.status.conditions[?(@.type=="Established")].status} {.metadata.managedFields[*].manager}`); !strings.HasPrefix(got, "True ") {
			t.Errorf("CRD: %q", got)
		}
		if got := c.Kubectl(t, "-n", "widgets", "get", "widget", "first", "-o", "jsonpath={.spec.size}"); got != "3" {
			t.Errorf("widget size %q", got)
		}
		if got := c.Kubectl(t, "-n", "widgets", "get", "configmap", "widgets-settings", "-o", "jsonpath={.data.greeting}"); got != "hi" {
			t.Errorf("configmap greeting %q", got)
		}
		if got := c.Kubectl(t, "-n", "widgets", "get", "secrets", "-l", "owner=helm,name=widgets", "-o", `jsonpath={range .items[*]}{.metadata.name}={.metadata.labels.status} {end}`); got != "sh.helm.release.v1.widgets.v1=deployed" {
			t.Errorf("release records %q", got)
		}
		if v, status, err := helm.Deployed(r); v != "1.0.0" || status != "deployed" || err != nil {
			t.Errorf("Deployed = %q %q %v", v, status, err)
		}
		pending(t, r, "")
		// Values built from other Go types are the same values.
		same := r
		same.Values = map[string]any{"data": map[string]string{"greeting": "hi"}}
		if skip, _ := run(t, same, false); skip != "release widgets/widgets deployed from chart widgets 1.0.0 as wanted" {
			t.Errorf("second run: skip %q", skip)
		}
	})

	t.Run("new values are applied", func(t *testing.T) {
		r := r
		r.Values = map[string]any{"data": map[string]any{"greeting": "bonjour"}}
		pending(t, r, "release widgets's values are not as wanted")
		if skip, _ := run(t, r, false); skip != "" {
			t.Fatalf("skipped: %s", skip)
		}
		if got := c.Kubectl(t, "-n", "widgets", "get", "configmap", "widgets-settings", "-o", "jsonpath={.data.greeting}"); got != "bonjour" {
			t.Errorf("configmap greeting %q", got)
		}
		pending(t, r, "")
	})

	r.Values = map[string]any{"data": map[string]any{"greeting": "bonjour"}}
	t.Run("a new chart version upgrades its CRD too", func(t *testing.T) {
		r := r
		r.Chart.Version = "1.1.0"
		pending(t, r, "release widgets runs chart widgets 1.0.0, not 1.1.0")
		if skip, _ := run(t, r, false); skip != "" {
			t.Fatalf("skipped: %s", skip)
		}
		if got := c.Kubectl(t, "get", "crd", "widgets.example.gpukit.dev", "-o", "jsonpath={.spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.color.type}"); got != "string" {
			t.Errorf("the CRD was not upgraded: color is %q", got)
		}
		if v, status, err := helm.Deployed(r); v != "1.1.0" || status != "deployed" || err != nil {
			t.Errorf("Deployed = %q %q %v", v, status, err)
		}
		pending(t, r, "")
	})

	r.Chart.Version = "1.1.0"
	t.Run("a namespace label taken away is put back", func(t *testing.T) {
		c.Kubectl(t, "label", "namespace", "widgets", "pod-security.kubernetes.io/enforce-", "team=ml")
		pending(t, r, "namespace widgets lacks label pod-security.kubernetes.io/enforce=privileged")
		if skip, _ := run(t, r, false); skip != "" {
			t.Fatalf("skipped: %s", skip)
		}
		if got := c.Kubectl(t, "get", "namespace", "widgets", "-o", `jsonpath={.metadata.labels.pod-security\.kubernetes\.io/enforce} {.metadata.labels.team}`); got != "privileged ml" {
			t.Errorf("namespace labels %q", got)
		}
		pending(t, r, "")
	})

	t.Run("a release the API server rejects is failed", func(t *testing.T) {
		bad := charts.Release{Name: "bad", Namespace: "widgets", Chart: charts.Chart{Name: "bad", Version: "0.1.0"}}
		ch := &chart.Chart{
			Metadata:  &chart.Metadata{APIVersion: chart.APIVersionV2, Name: "bad", Version: "0.1.0", Type: "application"},
			Templates: []*chart.File{{Name: "templates/configmap.yaml", Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: Not_A_DNS_Name}\n")}},
		}
		err := helm.Apply(ctx, bad, ch)
		if err == nil || !strings.HasPrefix(err.Error(), "release widgets/bad (chart bad 0.1.0): ") || !strings.Contains(err.Error(), "Not_A_DNS_Name") {
			t.Fatalf("error %v", err)
		}
		if v, status, err := helm.Deployed(bad); v != "0.1.0" || status != "failed" || err != nil {
			t.Errorf("Deployed = %q %q %v", v, status, err)
		}
		pending(t, bad, "release bad is failed")
	})
}
