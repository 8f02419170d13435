package kubeflow

import (
	"context"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/gpukit/gpukit/pkg/dashboards"
	"github.com/gpukit/gpukit/pkg/engine"
)

// DashboardObjects are the dashboards' ConfigMaps in the monitoring
// namespace.
func DashboardObjects() ([]*yaml.RNode, error) {
	var docs []any
	for _, d := range dashboards.All() {
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
		for _, d := range dashboards.All() {
			names = append(names, d.Title)
		}
		return rendered{objs: objs, what: "dashboards " + strings.Join(names, ", ")}, err
	}
	return o
}
