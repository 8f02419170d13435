package kubeflow

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/gpukit/gpukit/pkg/engine"
)

// Dashboard is one Grafana dashboard gpukit provisions: a ConfigMap
// labelled grafana_dashboard=1, which kube-prometheus-stack's Grafana
// sidecar loads from every namespace (beside the chart's own dashboards,
// which drill down the cluster's CPU and memory by cluster, namespace,
// node and pod).
type Dashboard struct {
	UID, Title string
	// Vars are query variables, each narrowing the next: label_values of
	// the query's metric under the earlier variables.
	Vars   []Var
	Panels []Panel
}

// Var is a dashboard variable over one label's values.
type Var struct {
	Name, Label string
	// Metric and Label: label_values(Metric{earlier vars}, Label).
	Metric string
}

// Panel is a time series panel of one or more PromQL queries.
type Panel struct {
	Title, Unit string
	Queries     []Query
}

// Query is one PromQL expression and how its series are named.
type Query struct{ Expr, Legend string }

// The labels the dashboards select on: those the ServiceMonitors add
// (cluster, node) and those of the pod a sample is about, which
// Prometheus renames exported_* because the scrape's own are the
// exporter's.
const (
	gpuSelector      = `cluster=~"$cluster", node=~"$node", exported_namespace=~"$namespace", exported_pod=~"$pod"`
	trainingSelector = `cluster=~"$cluster", exported_namespace=~"$namespace", exported_pod=~"$pod"`
	podLegend        = "{{exported_namespace}}/{{exported_pod}}"
)

// Dashboards are gpukit's: the GPUs (DCGM exporter metrics) by cluster,
// node, namespace and pod; training runs (statsd metrics) beside the
// power and utilisation of their GPUs.
func Dashboards() []Dashboard {
	gpu := func(f string) string { return fmt.Sprintf(f, gpuSelector) }
	tr := func(f string) string { return fmt.Sprintf(f, trainingSelector) }
	return []Dashboard{
		{
			UID: "gpukit-gpus", Title: "gpukit / GPUs",
			Vars: []Var{
				{"cluster", "cluster", "DCGM_FI_DEV_GPU_UTIL"},
				{"node", "node", "DCGM_FI_DEV_GPU_UTIL"},
				{"namespace", "exported_namespace", "DCGM_FI_DEV_GPU_UTIL"},
				{"pod", "exported_pod", "DCGM_FI_DEV_GPU_UTIL"},
			},
			Panels: []Panel{
				{"GPU utilisation", "percent", []Query{{gpu(`avg by (node, gpu) (DCGM_FI_DEV_GPU_UTIL{%s})`), "{{node}} GPU {{gpu}}"}}},
				{"Power by node", "watt", []Query{{gpu(`sum by (node) (DCGM_FI_DEV_POWER_USAGE{%s})`), "{{node}}"}}},
				{"Tensor core activity", "percentunit", []Query{{gpu(`avg by (node, gpu) (DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{%s})`), "{{node}} GPU {{gpu}}"}}},
				{"Framebuffer used", "mbytes", []Query{{gpu(`max by (node, gpu) (DCGM_FI_DEV_FB_USED{%s})`), "{{node}} GPU {{gpu}}"}}},
				{"Temperature", "celsius", []Query{{gpu(`max by (node, gpu) (DCGM_FI_DEV_GPU_TEMP{%s})`), "{{node}} GPU {{gpu}}"}}},
				{"GPUs in use by namespace", "none", []Query{{gpu(`count by (exported_namespace) (DCGM_FI_DEV_GPU_UTIL{%s, exported_pod!=""})`), "{{exported_namespace}}"}}},
				{"Last XID error", "none", []Query{{gpu(`max by (node, gpu) (DCGM_FI_DEV_XID_ERRORS{%s})`), "{{node}} GPU {{gpu}}"}}},
				{"Uncorrectable remapped rows", "none", []Query{{gpu(`max by (node, gpu) (DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS{%s})`), "{{node}} GPU {{gpu}}"}}},
			},
		},
		{
			UID: "gpukit-training", Title: "gpukit / Training",
			Vars: []Var{
				{"cluster", "cluster", "training_loss"},
				{"namespace", "exported_namespace", "training_loss"},
				{"pod", "exported_pod", "training_loss"},
			},
			Panels: []Panel{
				{"Loss", "none", []Query{{tr(`training_loss{%s}`), podLegend}}},
				{"Error rate", "percentunit", []Query{{tr(`training_error_rate{%s}`), podLegend}}},
				{"Epoch", "none", []Query{{tr(`training_epoch{%s}`), podLegend}}},
				{"GPU power of the runs", "watt", []Query{{tr(`sum by (exported_namespace, exported_pod) (DCGM_FI_DEV_POWER_USAGE{%s})`), podLegend}}},
				{"GPU utilisation of the runs", "percent", []Query{{tr(`avg by (exported_namespace, exported_pod) (DCGM_FI_DEV_GPU_UTIL{%s})`), podLegend}}},
			},
		},
	}
}

// JSON is the dashboard in Grafana's model: a Prometheus datasource
// variable first (kube-prometheus-stack provisions one), then the query
// variables ("All" matches a missing label too), panels two to a row.
func (d Dashboard) JSON() ([]byte, error) {
	ds := map[string]any{"type": "prometheus", "uid": "${datasource}"}
	vars := []any{map[string]any{"name": "datasource", "label": "Data source", "type": "datasource", "query": "prometheus", "hide": 0}}
	var earlier []string
	for _, v := range d.Vars {
		sel := v.Metric
		if len(earlier) > 0 {
			sel += "{" + strings.Join(earlier, ", ") + "}"
		}
		q := fmt.Sprintf("label_values(%s, %s)", sel, v.Label)
		vars = append(vars, map[string]any{
			"name": v.Name, "label": v.Name, "type": "query", "datasource": ds,
			"query":      map[string]any{"query": q, "refId": v.Name},
			"definition": q, "refresh": 2, "sort": 1,
			"includeAll": true, "allValue": ".*", "multi": true,
			"current": map[string]any{"text": "All", "value": "$__all"},
		})
		earlier = append(earlier, fmt.Sprintf(`%s=~"$%s"`, v.Label, v.Name))
	}
	var panels []any
	for i, p := range d.Panels {
		var targets []any
		for j, q := range p.Queries {
			targets = append(targets, map[string]any{"datasource": ds, "expr": q.Expr, "legendFormat": q.Legend, "refId": string(rune('A' + j))})
		}
		panels = append(panels, map[string]any{
			"id": i + 1, "type": "timeseries", "title": p.Title, "datasource": ds,
			"gridPos":     map[string]any{"x": 12 * (i % 2), "y": 8 * (i / 2), "w": 12, "h": 8},
			"fieldConfig": map[string]any{"defaults": map[string]any{"unit": p.Unit}, "overrides": []any{}},
			"targets":     targets,
		})
	}
	return json.MarshalIndent(map[string]any{
		"uid": d.UID, "title": d.Title, "tags": []any{"gpukit"},
		"editable": false, "schemaVersion": 39, "refresh": "30s",
		"time":       map[string]any{"from": "now-6h", "to": "now"},
		"templating": map[string]any{"list": vars},
		"panels":     panels,
	}, "", "  ")
}

// DashboardObjects are the dashboards' ConfigMaps in the monitoring
// namespace.
func DashboardObjects() ([]*yaml.RNode, error) {
	var docs []any
	for _, d := range Dashboards() {
		b, err := d.JSON()
		if err != nil {
			return nil, err
		}
		docs = append(docs, map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": d.UID + "-dashboard", "namespace": MonitoringNamespace,
				"labels": merge(managedBy, map[string]any{"grafana_dashboard": "1"})},
			"data": map[string]any{d.UID + ".json": string(b)},
		})
	}
	return nodes(docs...)
}

// dashboardsPhase applies the dashboards' ConfigMaps.
func (p *Platform) dashboardsPhase() *objectsPhase {
	o := &objectsPhase{p: p, id: PhaseDashboards, title: "Provision the GPU and training dashboards in Grafana",
		action: "provision the dashboards", enabled: on(p.site.Addons.Monitoring.Enabled)}
	o.render = func(context.Context, *engine.Host) (rendered, error) {
		objs, err := DashboardObjects()
		names := make([]string, 0, len(objs))
		for _, d := range Dashboards() {
			names = append(names, d.Title)
		}
		return rendered{objs: objs, what: "dashboards " + strings.Join(names, ", ")}, err
	}
	return o
}
