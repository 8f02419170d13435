//go:build tools

// The platform's programs for tests and the lab, built from these modules
// by ../build.sh platform: prometheus/statsd_exporter (the image of
// gpukit's platform/training-metrics phase). Importing it here makes `go
// mod tidy` record every go.sum entry it needs.
package tools

import (
	_ "github.com/prometheus/statsd_exporter"
)
