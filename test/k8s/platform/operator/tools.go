//go:build tools

// prometheus-operator at kube-prometheus-stack 88.5.3's appVersion, for
// tests: it turns gpukit's ServiceMonitors into Prometheus' scrape
// configuration on the test control plane. Its own module: its
// requirements (Prometheus' packages among them) differ from those of
// ../ (built by ../../build.sh platform).
package tools

import (
	_ "github.com/prometheus-operator/prometheus-operator/cmd/operator"
)
