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
// release=<its name>), the cluster's name added to every sample.
func (s Site) StatsdObjects() ([]*yaml.RNode, error) {
	labels := merge(statsdLabels, managedBy)
	port := func(name string, n int, proto string) map[string]any {
		return map[string]any{"name": name, "port": n, "targetPort": name, "protocol": proto}
	}
	container := map[string]any{
		"name": "statsd-exporter", "image": StatsdImage,
		"args": []any{"--statsd.listen-udp=:9125", "--statsd.listen-tcp=:9125", "--web.listen-address=:9102"},
		"ports": []any{
			map[string]any{"name": "metrics", "containerPort": StatsdMetricsPort, "protocol": "TCP"},
			map[string]any{"name": "statsd-udp", "containerPort": StatsdPort, "protocol": "UDP"},
			map[string]any{"name": "statsd-tcp", "containerPort": StatsdPort, "protocol": "TCP"},
		},
		"readinessProbe": map[string]any{"httpGet": map[string]any{"path": "/-/ready", "port": "metrics"}},
		"livenessProbe":  map[string]any{"httpGet": map[string]any{"path": "/-/healthy", "port": "metrics"}},
		"resources": map[string]any{
			"requests": map[string]any{"cpu": "50m", "memory": "64Mi"},
			"limits":   map[string]any{"memory": "256Mi"},
		},
		"securityContext": map[string]any{
			"runAsNonRoot": true, "runAsUser": 65534, "readOnlyRootFilesystem": true,
			"allowPrivilegeEscalation": false, "capabilities": map[string]any{"drop": []any{"ALL"}},
		},
	}
	return nodes(
		map[string]any{
			"apiVersion": "apps/v1", "kind": "Deployment",
			"metadata": map[string]any{"name": StatsdService, "namespace": MonitoringNamespace, "labels": labels},
			"spec": map[string]any{
				"replicas": 1,
				"selector": map[string]any{"matchLabels": statsdLabels},
				"template": map[string]any{
					"metadata": map[string]any{"labels": statsdLabels},
					"spec": map[string]any{
						"automountServiceAccountToken": false,
						"securityContext":              map[string]any{"seccompProfile": map[string]any{"type": "RuntimeDefault"}},
						"containers":                   []any{container},
					},
				},
			},
		},
		map[string]any{
			"apiVersion": "v1", "kind": "Service",
			"metadata": map[string]any{"name": StatsdService, "namespace": MonitoringNamespace, "labels": labels},
			"spec": map[string]any{
				"selector": statsdLabels,
				"ports": []any{port("metrics", StatsdMetricsPort, "TCP"), port("statsd-udp", StatsdPort, "UDP"),
					port("statsd-tcp", StatsdPort, "TCP")},
			},
		},
		map[string]any{
			"apiVersion": "monitoring.coreos.com/v1", "kind": "ServiceMonitor",
			"metadata": map[string]any{"name": StatsdService, "namespace": MonitoringNamespace,
				"labels": merge(labels, map[string]any{"release": MonitoringRelease})},
			"spec": map[string]any{
				"selector": map[string]any{"matchLabels": statsdLabels},
				"endpoints": []any{map[string]any{
					"port": "metrics", "interval": "15s",
					"relabelings": s.clusterRelabeling(),
				}},
			},
		},
	)
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
