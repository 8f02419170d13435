package swarmplatform

import (
	"fmt"
	"testing"

	"helm.sh/helm/v3/pkg/chart"

	"github.com/gpukit/gpukit/manifests"
	"github.com/gpukit/gpukit/pkg/charts"
	"github.com/gpukit/gpukit/pkg/imageref"
	"github.com/gpukit/gpukit/pkg/kubeflow"
	"github.com/gpukit/gpukit/test/fixtures"
)

// The swarm platform runs what the Kubernetes platform's charts run: each
// image of the bill is the one its chart (the real archive) names by
// default.
func TestSwarmImagesAreTheCharts(t *testing.T) {
	src := charts.Source(fixtures.Dir(t, "charts"))
	load := func(c charts.Chart) *chart.Chart {
		t.Helper()
		ch, err := src.Load(t.Context(), c)
		if err != nil {
			t.Fatal(err)
		}
		return ch
	}
	sub := func(ch *chart.Chart, name string) *chart.Chart {
		for _, d := range ch.Dependencies() {
			if d.Name() == name {
				return d
			}
		}
		t.Fatalf("%s has no subchart %s", ch.Name(), name)
		return nil
	}
	image := func(v map[string]any, path ...string) map[string]any {
		for _, p := range path {
			v, _ = v[p].(map[string]any)
		}
		return v
	}
	// ref is the image's values; a null repository is the chart's default
	// (traefik's values say so: docker.io/traefik for Traefik Proxy).
	ref := func(img map[string]any, tag any) string {
		r, _ := img["repository"].(string)
		if r == "" {
			r = "docker.io/traefik"
		}
		if reg, ok := img["registry"].(string); ok && reg != "" {
			r = reg + "/" + r
		}
		return fmt.Sprintf("%s:%v", r, tag)
	}
	traefik, kps, dcgm := load(kubeflow.TraefikChart), load(kubeflow.MonitoringChart), load(kubeflow.DCGMChart)
	grafana, nodeExporter := sub(kps, "grafana"), sub(kps, "prometheus-node-exporter")
	prom := image(kps.Values, "prometheus", "prometheusSpec", "image")
	for name, chartRef := range map[string]string{
		"traefik":       ref(image(traefik.Values, "image"), traefik.Metadata.AppVersion),
		"prometheus":    ref(prom, prom["tag"]),
		"grafana":       ref(image(grafana.Values, "image"), grafana.Metadata.AppVersion),
		"node-exporter": ref(image(nodeExporter.Values, "image"), "v"+nodeExporter.Metadata.AppVersion),
		"dcgm-exporter": ref(image(dcgm.Values, "image"), image(dcgm.Values, "image")["tag"]),
	} {
		want, ok := imageref.Normal(chartRef)
		if got := manifests.Bill().Image(name).Ref; !ok || got != want {
			t.Errorf("the bill's %s is %s; its chart runs %s", name, got, want)
		}
	}
}
