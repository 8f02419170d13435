// Package scripts holds the shell scripts gpukit runs on hosts, embedded in
// the binary. Each is piped to `bash -s` after a strict-mode prelude.
package scripts

import (
	_ "embed"
)

// Prelude starts every script: fail on errors, unset variables and broken
// pipes, and never wait for a prompt.
const Prelude = "set -euo pipefail\nexport LC_ALL=C DEBIAN_FRONTEND=noninteractive\n"

//go:embed probe.sh
var probe string

// Probe returns the read-only fact-gathering script (one round trip per host).
func Probe() string { return Prelude + probe }
