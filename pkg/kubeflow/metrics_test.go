package kubeflow

import (
	"context"
	"encoding/json"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/kio"

	"github.com/gpukit/gpukit/pkg/charts"
	"github.com/gpukit/gpukit/pkg/dashboards"
	"github.com/gpukit/gpukit/test/fixtures"
	"github.com/gpukit/gpukit/test/golden"
)

// The statsd exporter's objects for a cluster gpukit built (its name on
// every sample) and for one it did not, as golden files.
func TestStatsdObjects(t *testing.T) {
	for _, tc := range []struct{ name, hosts string }{{"ingress-host", siteCases[0].hosts}, {"no-inventory", ""}} {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := site(t, "", tc.hosts).StatsdObjects()
			if err != nil {
				t.Fatal(err)
			}
			out, err := kio.StringAll(objs)
			if err != nil {
				t.Fatal(err)
			}
			golden.AssertString(t, filepath.Join("testdata", "statsd", tc.name+".yaml"), out)
		})
	}
}

// Each dashboard, as Grafana gets it, as golden files; its ConfigMap
// carries the label the monitoring chart's Grafana sidecar loads.
func TestDashboards(t *testing.T) {
	for _, d := range dashboards.All() {
		t.Run(d.UID, func(t *testing.T) {
			b, err := d.JSON()
			if err != nil {
				t.Fatal(err)
			}
			if !json.Valid(b) {
				t.Fatal("not JSON")
			}
			golden.Assert(t, filepath.Join("testdata", "dashboards", d.UID+".json"), append(b, '\n'))
		})
	}
	objs, err := DashboardObjects()
	if err != nil || len(objs) != len(dashboards.All()) {
		t.Fatal(len(objs), err)
	}
	for _, o := range objs {
		if o.GetLabels()["grafana_dashboard"] != "1" || o.GetNamespace() != MonitoringNamespace {
			t.Errorf("%s: labels %v in %s", o.GetName(), o.GetLabels(), o.GetNamespace())
		}
	}
}

var (
	metricName = regexp.MustCompile(`\b(DCGM_FI_[A-Z0-9_]+|training_[a-z_]+)\b`)
	labelName  = regexp.MustCompile(`\b([a-z_]+)\s*(=~|!=|=)\s*"`)
)

// The dashboards query only what the exporters export: each DCGM field is
// in the counters the real dcgm-exporter chart configures (rendered from
// the fixtures cache's archive with gpukit's values), each training metric is
// one the documented statsd lines become; and they select only on labels
// the scrapes give: node and cluster from the ServiceMonitors'
// relabelings, the pod's as exported_*.
func TestDashboardsQueryWhatTheExportersExport(t *testing.T) {
	s := site(t, "", siteCases[0].hosts)
	var dcgm charts.Release
	for _, r := range s.Releases() {
		if r.Chart.Name == DCGMChart.Name {
			dcgm = r
		}
	}
	ch, err := charts.Source(fixtures.Dir(t, "charts")).Load(context.Background(), dcgm.Chart)
	if err != nil {
		t.Fatal(err)
	}
	m, err := charts.Render(context.Background(), dcgm, ch, "v1.37.2", "monitoring.coreos.com/v1")
	if err != nil {
		t.Fatal(err)
	}
	objs, err := kio.FromBytes([]byte(m))
	if err != nil {
		t.Fatal(err)
	}
	counters := map[string]bool{}
	var monitor string
	for _, o := range objs {
		switch o.GetKind() + "/" + o.GetName() {
		case "ConfigMap/exporter-metrics-config-map":
			for _, line := range strings.Split(o.GetDataMap()["metrics"], "\n") {
				if f := strings.TrimSpace(strings.Split(line, ",")[0]); strings.HasPrefix(f, "DCGM_FI_") {
					counters[f] = true
				}
			}
		case "ServiceMonitor/dcgm-exporter":
			monitor = o.MustString()
		}
	}
	if len(counters) < 10 {
		t.Fatalf("the chart's counters: %v", counters)
	}
	statsd, err := s.StatsdObjects()
	if err != nil {
		t.Fatal(err)
	}
	for _, sm := range []string{monitor, statsd[2].MustString()} {
		for _, want := range []string{"targetLabel: node", "targetLabel: cluster", "replacement: t", "release: kube-prometheus-stack"} {
			if !strings.Contains(sm, want) {
				t.Errorf("ServiceMonitor lacks %q:\n%s", want, sm)
			}
		}
	}
	training := map[string]bool{}
	for _, m := range TrainingMetrics {
		training[strings.ReplaceAll(m, ".", "_")] = true // the exporter's default mapping
	}
	labels := []string{"cluster", "node", "exported_namespace", "exported_pod", "gpu"}
	used := map[string]bool{}
	for _, d := range dashboards.All() {
		var exprs []string
		for _, p := range d.Panels {
			for _, q := range p.Queries {
				exprs = append(exprs, q.Expr)
			}
		}
		for _, v := range d.Vars {
			exprs = append(exprs, v.Metric)
			if !slices.Contains(labels, v.Label) {
				t.Errorf("%s: variable %s on label %s", d.UID, v.Name, v.Label)
			}
		}
		for _, e := range exprs {
			if strings.Count(e, "(") != strings.Count(e, ")") || strings.Count(e, "{") != strings.Count(e, "}") {
				t.Errorf("%s: unbalanced %s", d.UID, e)
			}
			names := metricName.FindAllString(e, -1)
			if len(names) == 0 {
				t.Errorf("%s: no metric in %s", d.UID, e)
			}
			for _, n := range names {
				used[n] = true
				if !counters[n] && !training[n] {
					t.Errorf("%s: %s queries %s, which neither exporter exports", d.UID, e, n)
				}
			}
			for _, l := range labelName.FindAllStringSubmatch(e, -1) {
				if !slices.Contains(labels, l[1]) {
					t.Errorf("%s: %s selects on %s", d.UID, e, l[1])
				}
			}
		}
	}
	for n := range training {
		if !used[n] {
			t.Errorf("no dashboard shows %s", n)
		}
	}
}
