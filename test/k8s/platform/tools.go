//go:build tools

// The platform's programs for tests and the lab, built from these modules
// by ../build.sh platform: prometheus/statsd_exporter (the image of
// gpukit's platform/training-metrics phase), Prometheus (the server
// kube-prometheus-stack runs, at the chart's version) and node_exporter
// (the swarm platform's, at kube-prometheus-stack's subchart's version). Importing them here makes `go mod tidy`
// record every go.sum entry they need.
package tools

import (
	_ "github.com/prometheus/node_exporter"
	_ "github.com/prometheus/prometheus/cmd/prometheus"
	_ "github.com/prometheus/statsd_exporter"
)
