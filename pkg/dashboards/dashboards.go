// Package dashboards is gpukit's Grafana dashboards, the same on Kubernetes
// (ConfigMaps kube-prometheus-stack's Grafana sidecar loads, beside the
// chart's own dashboards, which drill down the cluster's CPU and memory)
// and on swarm (files Grafana's provisioning reads): what they show and
// their JSON model.
package dashboards

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Dashboard is one Grafana dashboard gpukit provisions.
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

// All are gpukit's dashboards: the GPUs (DCGM exporter metrics) by cluster,
// node, namespace and pod; training runs (statsd metrics) beside the
// power and utilisation of their GPUs.
func All() []Dashboard {
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
