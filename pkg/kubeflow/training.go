package kubeflow

import (
	"context"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/gpukit/gpukit/manifests"
	"github.com/gpukit/gpukit/pkg/engine"
)

// StatsdImage is the statsd exporter's (prometheus/statsd_exporter), as the
// bill of materials pins it: the project's own image (a site's registry
// mirror serves it through containerd's mirror settings).
var StatsdImage = manifests.Bill().Image("statsd-exporter").Ref

const (
	StatsdService = "statsd-exporter"
	// StatsdPort takes statsd lines on UDP and TCP; StatsdMetricsPort is
	// what Prometheus scrapes.
	StatsdPort        = 9125
	StatsdMetricsPort = 9102
)

// TrainingMetrics are the metrics the training dashboard shows, as a
// training loop sends them (statsd gauges, DogStatsD tags naming the pod):
//
//	training.loss:0.42|g|#namespace:team-a,pod:mnist-0
//
// to statsd-exporter.monitoring:9125 (UDP). The exporter names them
// training_loss and so on (dots become underscores); Prometheus keeps the
// tags as exported_namespace and exported_pod (the scrape's own namespace
// and pod labels are the exporter's), as it does the DCGM exporter's labels
// of the pod a GPU is assigned to: the dashboard joins the two on them.
var TrainingMetrics = []string{"training.loss", "training.error_rate", "training.epoch"}

// statsdLabels select the exporter's pods and its service.
var statsdLabels = map[string]any{"app.kubernetes.io/name": StatsdService, "app.kubernetes.io/part-of": "gpukit-platform"}

// StatsdObjects are the exporter's Deployment, its Service and the
// ServiceMonitor the monitoring release's Prometheus selects (labelled
// release=<its name>), the cluster's name added to every sample: the file
// manifests/objects/statsd-exporter.yaml, completed here.
func (s Site) StatsdObjects() ([]*yaml.RNode, error) {
	labels := merge(statsdLabels, managedBy)
	objs := manifests.Objects("statsd-exporter")
	docs := make([]any, len(objs))
	for i, o := range objs {
		meta := map[string]any{"name": StatsdService, "namespace": MonitoringNamespace, "labels": labels}
		spec, _ := o["spec"].(map[string]any)
		switch o["kind"] {
		case "Deployment":
			spec["selector"] = map[string]any{"matchLabels": statsdLabels}
			tmpl := spec["template"].(map[string]any)
			tmpl["metadata"] = map[string]any{"labels": statsdLabels}
			for _, c := range tmpl["spec"].(map[string]any)["containers"].([]any) {
				c.(map[string]any)["image"] = StatsdImage
			}
		case "Service":
			spec["selector"] = statsdLabels
		case "ServiceMonitor":
			meta["labels"] = merge(labels, map[string]any{"release": MonitoringRelease})
			spec["selector"] = map[string]any{"matchLabels": statsdLabels}
			for _, e := range spec["endpoints"].([]any) {
				e.(map[string]any)["relabelings"] = s.clusterRelabeling()
			}
		}
		o["metadata"] = meta
		docs[i] = o
	}
	return nodes(docs...)
}

// clusterRelabeling adds the cluster's name (the dashboards' first
// variable) and the scraped pod's node to a scrape's samples.
func (s Site) clusterRelabeling() []any {
	out := []any{map[string]any{"action": "replace", "sourceLabels": []any{"__meta_kubernetes_pod_node_name"}, "targetLabel": "node"}}
	if s.Cluster != "" {
		out = append(out, map[string]any{"action": "replace", "targetLabel": "cluster", "replacement": s.Cluster})
	}
	return out
}

func merge(ms ...map[string]any) map[string]any {
	out := map[string]any{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

// trainingMetricsPhase applies the statsd exporter's objects.
func (p *Platform) trainingMetricsPhase() *objectsPhase {
	o := &objectsPhase{p: p, id: PhaseTrainingMetrics, title: "Install the statsd exporter training loops push metrics to, scraped by Prometheus",
		action: "install the statsd exporter", enabled: on(p.site.Addons.Monitoring.Enabled)}
	o.render = func(context.Context, *engine.Host) (rendered, error) {
		objs, err := p.site.StatsdObjects()
		return rendered{objs: objs, what: "the statsd exporter " + StatsdImage}, err
	}
	return o
}
