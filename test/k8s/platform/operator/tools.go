//go:build tools

// prometheus-operator at kube-prometheus-stack 88.5.3's appVersion, for
// tests: it turns gpukit's ServiceMonitors into Prometheus' scrape
// configuration on the test control plane, and its config reloader
// (the Prometheus pods' sidecar in the lab cluster). Its own module: its
// requirements (Prometheus' packages among them) differ from those of
// ../ (built by ../../build.sh platform).
package tools

import (
	_ "github.com/prometheus-operator/prometheus-operator/cmd/operator"
	_ "github.com/prometheus-operator/prometheus-operator/cmd/prometheus-config-reloader"
)
