#!/usr/bin/env bash
# An air-gapped site's bundle against the site's mirrors, in one run: the
# demo's site (3 Kubernetes hosts, 2 with simulated GPUs) installed by gpukit
# init from the lab's mirrors in one lab, and from a bundle of the same
# sources, and nothing else, in another. Reports the bundle's size by kind,
# its create time (first and second run) and both inits' wall times with
# their ratio. A benchmark: nothing is asserted about time. Needs root, the
# lab's dependencies and the Kubernetes builds (make k8s).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=/usr/local/go/bin:$PATH
out=${OUT:-bench/results/bundle-$(date -u +%Y%m%dT%H%M%SZ).md}
mkdir -p "$(dirname "$out")"
GPUKIT_BENCH=1 GPUKIT_LAB=1 GPUKIT_K8S=1 GPUKIT_BENCH_OUT=$(realpath -m "$out") \
  go test -count=1 -timeout 60m -run '^TestBenchBundle$' ./test/e2e -v | grep -v '^=== ' | tail -n 30
echo "bench/bundle.sh: $out"
