package kubeflow_test

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/kustomize/kyaml/yaml"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/gpukit/gpukit/pkg/dashboards"
	"github.com/gpukit/gpukit/pkg/kubeflow"
	"github.com/gpukit/gpukit/test/cluster"
)

// A real Prometheus (built from its module by test/k8s/build.sh platform)
// scrapes the real statsd exporter as kube-prometheus-stack's would through
// gpukit's ServiceMonitor: the target labels prometheus-operator gives an
// endpoint (namespace, pod, service, endpoint, container), honor_labels
// off, and the ServiceMonitor's own relabelings (cluster, node). After the
// README's training lines are pushed, every query of both dashboards, as
// Grafana gets them (the ConfigMaps' JSON), parses and runs, with "All"
// and with one value per variable; the training panels find the pushed
// runs by exported_namespace/exported_pod, and each variable's
// label_values lists what was pushed. Those target labels and relabelings
// are what the real operator writes for this ServiceMonitor
// (deploy_api_test.go reads its configuration); the DCGM exporter (no
// GPUs here) is not part of it: the GPU panels' queries run, empty.
func TestPrometheusScrapesTrainingMetricsAndTheDashboardsFindThem(t *testing.T) {
	cluster.Require(t)
	set := cluster.Build(t, "platform")
	statsd, web, slog := runStatsd(t, filepath.Join(set, "statsd_exporter"), statsdContainer(t))
	pushTrainingLines(t, statsd)

	objs, err := (kubeflow.Site{Cluster: "t"}).StatsdObjects()
	if err != nil {
		t.Fatal(err)
	}
	sm := objs[2]
	if sm.GetKind() != "ServiceMonitor" {
		t.Fatalf("objects %d is a %s", 2, sm.GetKind())
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfg, scrapeConfig(t, sm, "127.0.0.1:"+web), 0o644); err != nil {
		t.Fatal(err)
	}
	api := freePort(t)
	var plog strings.Builder
	start(t, &plog, filepath.Join(set, "prometheus"), "--config.file="+cfg, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address=127.0.0.1:"+api)
	base := "http://127.0.0.1:" + api
	waitReady(t, base+"/-/ready", &plog)

	query := func(q string) ([]sample, error) {
		code, body := httpGet(t, base+"/api/v1/query?query="+url.QueryEscape(q))
		var r struct {
			Status, Error string
			Data          struct{ Result []sample }
		}
		if err := json.Unmarshal([]byte(body), &r); err != nil || code != 200 || r.Status != "success" {
			return nil, fmt.Errorf("%d %s %s: %s", code, r.Status, r.Error, body)
		}
		return r.Data.Result, nil
	}
	// Scraped every second: wait for both runs.
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		if s, err := query(`count(training_loss)`); err == nil && len(s) == 1 && s[0].Value[1] == "2" {
			break
		}
		if time.Now().After(deadline) {
			_, targets := httpGet(t, base+"/api/v1/targets")
			t.Fatalf("Prometheus has not scraped both runs' loss; targets: %s\nprometheus:\n%s\nstatsd_exporter:\n%s", targets, tailOf(plog.String()), slog.String())
		}
	}

	all := map[string]string{"cluster": ".*", "node": ".*", "namespace": ".*", "pod": ".*"}
	one := map[string]string{"cluster": "t", "node": "gpu-1", "namespace": "team-a", "pod": "mnist-0"}
	for _, d := range dashboards.All() {
		b, err := d.JSON()
		if err != nil {
			t.Fatal(err)
		}
		var g struct {
			Panels []struct {
				Title   string
				Targets []struct{ Expr string }
			}
			Templating struct {
				List []struct {
					Name  string
					Query json.RawMessage
				}
			}
		}
		if err := json.Unmarshal(b, &g); err != nil {
			t.Fatal(err)
		}
		for _, p := range g.Panels {
			for _, tg := range p.Targets {
				for _, vars := range []map[string]string{all, one} {
					q := substitute(tg.Expr, vars)
					got, err := query(q)
					if err != nil {
						t.Errorf("%s / %s: %s: %v", d.Title, p.Title, q, err)
						continue
					}
					if !strings.HasPrefix(tg.Expr, "training_") {
						continue
					}
					// The training panels: team-a's mnist-0 (and, with All,
					// team-b's bert-1), named as the legend names them.
					var runs []string
					for _, s := range got {
						runs = append(runs, s.Metric["exported_namespace"]+"/"+s.Metric["exported_pod"])
						if s.Metric["cluster"] != "t" || s.Metric["node"] != "gpu-1" || s.Metric["namespace"] != "monitoring" {
							t.Errorf("%s / %s: labels %v", d.Title, p.Title, s.Metric)
						}
					}
					slices.Sort(runs)
					want := []string{"team-a/mnist-0"}
					if vars["pod"] == ".*" && p.Title == "Loss" {
						want = []string{"team-a/mnist-0", "team-b/bert-1"}
					}
					if !slices.Equal(runs, want) {
						t.Errorf("%s / %s: %s: runs %v, want %v", d.Title, p.Title, q, runs, want)
					}
				}
			}
		}
		// Each variable as Grafana resolves label_values(SELECTOR, LABEL):
		// the label's values among the selector's series.
		for _, v := range g.Templating.List {
			var q struct{ Query string }
			if v.Name == "datasource" || json.Unmarshal(v.Query, &q) != nil {
				continue
			}
			m := labelValues.FindStringSubmatch(q.Query)
			if m == nil {
				t.Errorf("%s: variable %s: %q is not label_values(SELECTOR, LABEL)", d.Title, v.Name, q.Query)
				continue
			}
			code, body := httpGet(t, base+"/api/v1/label/"+m[2]+"/values?match[]="+url.QueryEscape(substitute(m[1], all)))
			var r struct {
				Status string
				Data   []string
			}
			if json.Unmarshal([]byte(body), &r); code != 200 || r.Status != "success" {
				t.Errorf("%s: variable %s: %d %s", d.Title, v.Name, code, body)
				continue
			}
			if d.UID == "gpukit-training" {
				want := map[string][]string{"cluster": {"t"}, "namespace": {"team-a", "team-b"}, "pod": {"bert-1", "mnist-0"}}[v.Name]
				if !slices.Equal(r.Data, want) {
					t.Errorf("%s: variable %s lists %v, want %v", d.Title, v.Name, r.Data, want)
				}
			}
		}
	}
}

var labelValues = regexp.MustCompile(`^label_values\((.+), ([a-z_]+)\)$`)

type sample struct {
	Metric map[string]string
	Value  []any
}

// substitute puts variable values where Grafana puts them ($name).
func substitute(expr string, vars map[string]string) string {
	for k, v := range vars {
		expr = strings.ReplaceAll(expr, "$"+k, v)
	}
	return expr
}

// scrapeConfig is the scrape job prometheus-operator makes of the
// ServiceMonitor sm for one endpoint at addr of pod statsd-exporter-0 on
// node gpu-1: the target labels it sets from the endpoint's Kubernetes
// metadata (namespace, service, pod, container, job = the service,
// endpoint; here given as the target's labels), then sm's relabelings.
func scrapeConfig(t *testing.T, sm *yaml.RNode, addr string) []byte {
	t.Helper()
	var spec struct {
		Endpoints []struct {
			Port        string
			Interval    string
			HonorLabels bool `json:"honorLabels"`
			Relabelings []struct {
				Action       string
				SourceLabels []string `json:"sourceLabels"`
				TargetLabel  string   `json:"targetLabel"`
				Replacement  *string
			}
		}
	}
	b, err := sm.Pipe(yaml.Lookup("spec"))
	if err != nil {
		t.Fatal(err)
	}
	if err := sigsyaml.Unmarshal([]byte(b.MustString()), &spec); err != nil || len(spec.Endpoints) != 1 {
		t.Fatalf("the ServiceMonitor's spec: %v %+v", err, spec)
	}
	ep := spec.Endpoints[0]
	var relabel []any
	for _, r := range ep.Relabelings {
		c := map[string]any{"action": r.Action, "target_label": r.TargetLabel}
		if len(r.SourceLabels) > 0 {
			c["source_labels"] = r.SourceLabels
		}
		if r.Replacement != nil {
			c["replacement"] = *r.Replacement
		}
		relabel = append(relabel, c)
	}
	out, err := sigsyaml.Marshal(map[string]any{
		"global": map[string]any{"scrape_interval": "1s"},
		"scrape_configs": []any{map[string]any{
			"job_name":     "serviceMonitor/" + kubeflow.MonitoringNamespace + "/" + sm.GetName() + "/0",
			"honor_labels": ep.HonorLabels,
			"static_configs": []any{map[string]any{
				"targets": []any{addr},
				"labels": map[string]any{
					"namespace": kubeflow.MonitoringNamespace, "pod": "statsd-exporter-0", "service": kubeflow.StatsdService,
					"container": "statsd-exporter", "endpoint": ep.Port, "job": kubeflow.StatsdService,
					"__meta_kubernetes_pod_node_name": "gpu-1",
				},
			}},
			"relabel_configs": relabel,
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func tailOf(s string) string {
	if len(s) > 4000 {
		return "..." + s[len(s)-4000:]
	}
	return s
}
