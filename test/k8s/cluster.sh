#!/usr/bin/env bash
# cluster.sh: a real Kubernetes control plane on loopback for development
# and demos (tests start their own with the Go helper test/cluster).
#
#   cluster.sh up [--webhooks]     build (cached), start one, print its kubeconfig path last
#   cluster.sh node NAME [GPUS] [--label k=v]...   add a GPU node (kwok runs it)
#   cluster.sh kubectl ARGS...     the kubectl of the same version, on the newest control plane
#   cluster.sh down                stop every control plane, the tests' included (a sweep after a crash)
#
# Control planes started here live in /var/tmp/gpukit-k8s/run/N (logs, certificates, etcd).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
RUN=${GPUKIT_K8S_RUN:-/var/tmp/gpukit-k8s/run}

die() { printf 'cluster.sh: %s\n' "$*" >&2; exit 1; }
newest() { # the newest running control plane's directory
	local d
	# shellcheck disable=SC2012 # our own numbered directories
	d=$(ls -1dt "$RUN"/*/ 2>/dev/null | head -n 1) || true
	if [ -z "$d" ] || [ ! -f "$d/ready" ]; then die "no control plane is up: cluster.sh up"; fi
	printf '%s\n' "${d%/}"
}

cmd_up() {
	local bin n d pid
	bin=$("$here/build.sh")
	mkdir -p "$RUN"
	n=1
	while [ -e "$RUN/$n" ]; do n=$((n + 1)); done
	d=$RUN/$n
	mkdir -p "$d"
	setsid "$bin/kube-env" up -dir "$d" -bin "$bin" "$@" </dev/null >"$d/kube-env.out" 2>&1 &
	pid=$!
	for _ in $(seq 600); do
		[ -f "$d/ready" ] && break
		kill -0 "$pid" 2>/dev/null || { tail -n 20 "$d/kube-env.out" >&2; die "the control plane did not start (logs in $d)"; }
		sleep 0.2
	done
	[ -f "$d/ready" ] || die "the control plane was not ready within 2 minutes (logs in $d)"
	ln -sf "$bin/kubectl" "$d/kubectl"
	echo "control plane $n up: $("$bin/kubectl" --kubeconfig "$d/kubeconfig" version -o json | awk -F'"' '/gitVersion/ { v = $4 } END { print v }'); add GPU nodes with: $0 node NAME [GPUS]" >&2
	echo "$d/kubeconfig"
}

cmd_node() {
	local d name gpus=8
	[ $# -ge 1 ] || die "usage: cluster.sh node NAME [GPUS] [--label k=v]..."
	d=$(newest)
	name=$1
	shift
	if [ $# -gt 0 ] && [[ $1 =~ ^[0-9]+$ ]]; then gpus=$1; shift; fi
	local args=()
	while [ $# -gt 0 ]; do
		case $1 in
		--label) args+=(-label "$2"); shift 2 ;;
		*) die "unknown option $1" ;;
		esac
	done
	"$(dirname "$(readlink -f "$d/kubectl")")/kube-env" node -kubeconfig "$d/kubeconfig" -name "$name" -gpus "$gpus" "${args[@]}"
}

cmd_kubectl() {
	local d
	d=$(newest)
	exec "$d/kubectl" --kubeconfig "$d/kubeconfig" "$@"
}

cmd_down() {
	local pids
	# Every kube-env, tests' included; their components die with them (Pdeathsig).
	pids=$(pgrep -f '/kube-env up ' || true)
	if [ -n "$pids" ]; then
		# shellcheck disable=SC2086 # a list of pids
		kill -TERM $pids 2>/dev/null || true
		for _ in $(seq 100); do
			pgrep -f '/kube-env up ' >/dev/null || break
			sleep 0.2
		done
		pkill -KILL -f '/kube-env up ' 2>/dev/null || true
	fi
	rm -rf "$RUN"
	echo "cluster.sh: every control plane stopped" >&2
}

case ${1:-} in
up | node | kubectl | down) c=$1; shift; "cmd_$c" "$@" ;;
*) die "usage: cluster.sh up|node|kubectl|down" ;;
esac
