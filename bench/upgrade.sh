#!/usr/bin/env bash
# The rolling driver upgrade's orchestration against the peer operators
# script today: gpukit upgrade driver over N kwok GPU nodes of a real API
# server (test/cluster; hosts simulated, their steps instant) at
# --max-unavailable 10%, then `kubectl drain` + `kubectl uncordon` of the
# same nodes, as many at once. Reports wall time and API requests per node
# and the ratios. A benchmark: nothing is asserted about time.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=/usr/local/go/bin:$PATH
nodes=${1:-100}
out=${OUT:-bench/results/upgrade-$(date -u +%Y%m%dT%H%M%SZ).md}
mkdir -p "$(dirname "$out")"
GPUKIT_BENCH=1 GPUKIT_K8S=1 GPUKIT_BENCH_NODES=$nodes GPUKIT_BENCH_OUT=$(realpath -m "$out") \
  go test -count=1 -timeout 60m -run '^TestBenchUpgradeRollout$' ./internal/flow -v | grep -v '^=== ' | tail -n 20
echo "bench/upgrade.sh: $out"
