#!/usr/bin/env bash
# kubeflow.sh: gpukit's Kubeflow apply against the upstream installer, in
# the same run, each on a fresh and identically configured control plane
# (test/k8s: a real API server with kwok nodes, webhook admission off):
#
#   gpukit      gpukit kubeflow deploy --kubeconfig K --only-phases kubeflow/manifests
#               --manifests TARBALL --version V  (built in-process, applied once in order)
#   upstream    cd manifests && while ! kustomize build example |
#                 kubectl apply --server-side --force-conflicts -f -; do sleep 20; done
#               (kubeflow/manifests' README; kustomize v5.4.3 as v1.10's README names it,
#               built from sigs.k8s.io/kustomize/kustomize/v5 in bench/kustomize; the
#               kubectl of the control plane's version)
#
# Reports wall time, peak memory (the largest process: /usr/bin/time's
# maximum resident set) and the upstream loop's whole-apply retries, and
# the ratios. Nothing is asserted.
#
#   bench/kubeflow.sh            REPS=1 by default; OUT=bench/results/kubeflow-<time>.md
#
# Also reports where gpukit's time goes (its log's stage timings) and the CPU of gpukit and
# of the control plane meanwhile: on 2 cores the API server is the bottleneck.
#
# Kubeflow v1.10.2 only: 26.03's example references remote bases on
# GitHub, which the upstream loop cannot fetch here (gpukit takes them from
# a bundle: --remote-bases).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
REPS=${REPS:-1}
VERSION=v1.10.2
# The release tree, locked by sha256 in test/fixtures/upstream.yaml: the fixtures tool checks it in
# the cache (.fixtures, or $GPUKIT_FIXTURES_CACHE) or copies it there from the local mirror.
CACHE=${GPUKIT_FIXTURES_CACHE:-$root/.fixtures}
TARBALL=$CACHE/kubeflow/manifests-$VERSION.tar.gz
OUT=${OUT:-$here/results/kubeflow-$(date +%Y%m%d-%H%M%S).md}
(cd "$root" && GPUKIT_FIXTURES_CACHE=$CACHE go run ./test/fixtures/cmd/fixtures "kubeflow/manifests-$VERSION.tar.gz" >/dev/null) ||
	{ echo "kubeflow.sh: $TARBALL missing: make fixtures" >&2; exit 1; }
command -v /usr/bin/time >/dev/null || { echo "kubeflow.sh: /usr/bin/time missing (apt-get install time)" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"; "$root/test/k8s/cluster.sh" down >/dev/null 2>&1 || true' EXIT

make -C "$root" build >/dev/null
gpukit=$root/bin/gpukit
(cd "$here/kustomize" && go build -o "$work/kustomize" sigs.k8s.io/kustomize/kustomize/v5)
mkdir -p "$work/tree" "$(dirname "$OUT")"
tar -xzf "$TARBALL" -C "$work/tree"
tree=$(dirname "$(find "$work/tree" -maxdepth 3 -path '*/example/kustomization.yaml' | head -n 1)")/..

# fresh: a new control plane with three kwok nodes; prints its kubeconfig.
fresh() {
	local kc
	kc=$("$root/test/k8s/cluster.sh" up 2>/dev/null | tail -n 1)
	for n in node-1 node-2 node-3; do "$root/test/k8s/cluster.sh" node "$n" 8 >/dev/null; done
	printf '%s\n' "$kc"
}

# cp_cpu: CPU seconds (user+system, in clock ticks) the test control plane's processes (API
# server, controllers, scheduler, kwok, etcd: test/k8s/kube-env and what it starts) used so far.
cp_cpu() {
	local pid
	for pid in $(pgrep -f 'gpukit-k8s|kube-env' || true); do cat "/proc/$pid/stat" 2>/dev/null || true; done |
		awk '{ sub(/.*\) /, ""); t += $12 + $13 } END { print t + 0 }' # after the command: utime stime are 12, 13
}

# measure NAME CMD...: runs CMD under /usr/bin/time; sets WALL (s), RSS (MiB), CPU (its user +
# system s) and CP (the control plane's CPU s meanwhile).
measure() {
	local name=$1 cp0
	shift
	cp0=$(cp_cpu)
	/usr/bin/time -f '%e %M %U %S' -o "$work/$name.time" "$@" >"$work/$name.out" 2>&1 || {
		echo "kubeflow.sh: $name failed:" >&2
		tail -n 20 "$work/$name.out" >&2
		exit 1
	}
	read -r WALL RSS_KB u s <"$work/$name.time"
	RSS=$((RSS_KB / 1024))
	CPU=$(awk -v u="$u" -v s="$s" 'BEGIN { printf "%.1f", u + s }')
	CP=$(awk -v a="$cp0" -v b="$(cp_cpu)" -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.1f", (b - a) / hz }')
}

# breakdown LOG: gpukit's critical path from its host log, in seconds: "build setup crds objects
# established-wait custom-resources webhook-wait" (setup: from the build to the first stage).
breakdown() {
	awk '
	function t(s,  a) { split(s, a, ":"); return a[1] * 3600 + a[2] * 60 + a[3] }
	function dur(s) { if (s ~ /ms$/) return s / 1000; if (s ~ /m/) { split(s, a, "m"); return a[1] * 60 + a[2] } return s + 0 }
	/ built in / { for (i = 1; i <= NF; i++) if ($i == "in") { build = dur($(i + 1)); built = t($1); break } }
	/ namespaces applied in / { first = t($1) - dur($NF) }
	/ CRDs applied in / { crds = dur($NF) }
	/ objects applied in / { objects = dur($NF); objdone = t($1) }
	/ CRD\(s\) established/ { est = t($1) - objdone; if (est < 0) est = 0 }
	/ custom resources applied in / { cr = dur($NF) }
	/backends Available in / { hooks = dur($NF) }
	END { printf "%.1f %.1f %.1f %.1f %.1f %.1f %.1f\n", build, first - built, crds, objects, est, cr, hooks }
	' "$1"
}

{
	echo "# Kubeflow $VERSION: gpukit kubeflow deploy vs the upstream apply loop"
	echo
	echo "$(date -u +%Y-%m-%dT%H:%MZ), $(nproc) CPUs, kustomize $(awk '/kustomize\/v5 v/ { print $NF }' "$here/kustomize/go.mod") (bench/kustomize), $(uname -r)"
	echo
	echo "| rep | gpukit s | gpukit MiB | upstream s | upstream MiB | upstream whole-apply retries | time ratio (upstream/gpukit) |"
	echo "|---|---|---|---|---|---|---|"
} >"$OUT"
parts=() # one breakdown row per rep

for rep in $(seq "$REPS"); do
	kc=$(fresh)
	measure gpukit "$gpukit" kubeflow deploy --kubeconfig "$kc" -o plain --only-phases kubeflow/manifests \
		--manifests "$TARBALL" --version "$VERSION" --credentials-out "$work/creds" --log-dir "$work/logs"
	gw=$WALL gr=$RSS
	read -r b0 b1 b2 b3 b4 b5 b6 <<<"$(breakdown "$(find "$work/logs" -name '*.log' ! -name run.log | head -n 1)")"
	parts+=("| $rep | $b0 | $b1 | $b2 | $b3 | $b4 | $b5 | $b6 | $CPU | $CP |")
	rm -rf "$work/logs"
	"$root/test/k8s/cluster.sh" down >/dev/null

	kc=$(fresh)
	kubectl=$(dirname "$kc")/kubectl
	cat >"$work/loop.sh" <<EOF
cd "$tree"
tries=0
while ! "$work/kustomize" build example | "$kubectl" --kubeconfig "$kc" apply --server-side --force-conflicts -f - >/dev/null; do
	tries=\$((tries + 1)); echo "retry \$tries" >&2; sleep 20
done
echo "retries \$tries"
EOF
	measure upstream bash "$work/loop.sh"
	uw=$WALL ur=$RSS
	retries=$(awk '/^retries/ { print $2 }' "$work/upstream.out")
	"$root/test/k8s/cluster.sh" down >/dev/null

	ratio=$(awk -v u="$uw" -v g="$gw" 'BEGIN { printf "%.1f", u / g }')
	echo "| $rep | $gw | $gr | $uw | $ur | $retries | $ratio |" >>"$OUT"
done

{
	echo
	echo "Where gpukit's time goes (s; from its log: the stages of kube.Apply in order, each after the one"
	echo "before; CPU: gpukit's own, and the control plane's over the same time, on the same cores):"
	echo
	echo "| rep | build | to the first stage | CRDs | objects | CRDs established, wait after objects | custom resources | webhook backends Available, wait | gpukit CPU | control plane CPU |"
	echo "|---|---|---|---|---|---|---|---|---|---|"
	printf '%s\n' "${parts[@]}"
	echo
	echo "gpukit: one run, zero whole-apply retries (single objects only, see its log); the upstream loop"
	echo "re-applies everything after each failure (CRDs not yet established, webhooks not yet served),"
	echo "sleeping 20 s between tries. Memory: the largest process of each (gpukit; kustomize or kubectl)."
} >>"$OUT"
cat "$OUT"
