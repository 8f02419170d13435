#!/usr/bin/env bash
# build.sh: builds Kubernetes test tooling from the Go modules under test/k8s
# (once: cached by a key of the module's go.mod, go.sum, sources and this
# script) and prints the directory that holds it. Test tooling only.
#
#   build.sh            the test control plane and the lab packages of the newest
#                       Kubernetes (this module, KUBE_VERSION below)
#   build.sh vX.Y.Z     the lab packages of another version (module kube-X.Y)
#   build.sh runtime    the lab hosts' runtime (module runtime)
#   build.sh flannel    the lab's pod network (module flannel: flanneld, install-conf;
#                       its nested module cni: the flannel CNI plugin)
#   build.sh platform   the platform's programs (module platform: statsd_exporter, prometheus, node_exporter;
#                       its nested module operator: prometheus-operator and its config reloader)
#   build.sh traefik    the platform's ingress proxy (module traefik: Traefik at the chart's
#                       appVersion, two modules the proxy cannot serve stood in: traefik/tools.go)
#   build.sh versions   the Kubernetes versions there are modules for, newest first
#   build.sh all        every set, one after the other (make test builds them before
#                       the tests start: cold builds beside lab tests starve them)
#   build.sh demo       the sets make demo uses: the newest Kubernetes, runtime, flannel
#   build.sh cached SET...  exits 0 if every SET (all and demo too) is built, else 1;
#                       builds nothing
#
# A Kubernetes set: kube-apiserver kube-controller-manager kube-scheduler
# kubectl kubelet kubeadm kube-proxy etcd (and etcdctl, etcdutl where the
# module requires them); `images` (what kubeadm config images
# list names), etcd-version; the newest also kwok, kube-env, pause and
# kwok-stages.yaml (kwok's node and pod stages, from its module).
# The runtime set: containerd, containerd-shim-runc-v2, ctr, runc (cgo,
# libseccomp), crictl, coredns (cmd/coredns: without the cloud DNS plugins),
# containerd.service (upstream's unit); versions
# (name version per line).
# The flannel set: flanneld (cgo, static), install-conf, cp (the chart's init
# container copies the CNI plugin with it), flannel (the CNI plugin); versions.
# The platform set: statsd_exporter, prometheus (no web UI assets), prometheus-operator,
# prometheus-config-reloader, node_exporter; versions.
# The traefik set: traefik; versions.
#
# A cold Kubernetes set takes about 6 minutes and 2-3 GB of memory per link
# step on 2 cores; a second build never runs at once (flock). The cache lives
# outside the work tree: $GPUKIT_K8S_CACHE (default /var/tmp/gpukit-k8s/bin).
set -euo pipefail
cd "$(dirname "$0")"
here=$PWD
export PATH=/usr/local/go/bin:$PATH
# The one place that names the newest Kubernetes version: it must be the go.mod's.
KUBE_VERSION=v1.37.2
cache=${GPUKIT_K8S_CACHE:-/var/tmp/gpukit-k8s/bin}
die() { printf 'build.sh: %s\n' "$*" >&2; exit 1; }
modversion() { awk -v m="$2" '$1 == m { print $2; exit } $1 == "require" && $2 == m { print $3; exit }' "$1/go.mod"; }

versions() {
	local d
	echo "$KUBE_VERSION"
	for d in "$here"/kube-*/; do modversion "$d" k8s.io/kubernetes; done | sort -rV
}

# expand SET...: the sets named, all and demo spelled out
expand() {
	local s
	for s in "$@"; do
		case $s in
		all) echo runtime flannel platform traefik "$(versions | tr '\n' ' ')" ;;
		demo) echo "$KUBE_VERSION" runtime flannel ;;
		*) echo "$s" ;;
		esac
	done
}

set=${1:-$KUBE_VERSION}
case $set in
versions) versions; exit 0 ;;
all | demo)
	for s in $(expand "$set"); do "$here/build.sh" "$s"; done
	exit 0
	;;
cached)
	shift
	for s in $(expand "$@"); do BUILD_SH_CACHED_ONLY=1 "$here/build.sh" "$s" >/dev/null || exit 1; done
	exit 0
	;;
runtime) mod=$here/runtime ;;
flannel) mod=$here/flannel ;;
platform) mod=$here/platform ;;
traefik) mod=$here/traefik ;;
"$KUBE_VERSION") mod=$here ;;
v1.*)
	minor=${set#v}
	mod=$here/kube-${minor%.*}
	[ -f "$mod/go.mod" ] || die "no module for Kubernetes $set (there are: $(versions | tr '\n' ' '))"
	;;
*) die "usage: build.sh [vX.Y.Z|runtime|flannel|platform|versions|all|demo|cached SET...]" ;;
esac
if [ "$set" != runtime ] && [ "$set" != flannel ] && [ "$set" != platform ] && [ "$set" != traefik ]; then
	got=$(modversion "$mod" k8s.io/kubernetes)
	[ "$got" = "$set" ] || die "$mod/go.mod has k8s.io/kubernetes $got, not $set: change both"
fi
cd "$mod"
key=$({ echo "$set"; cat go.mod go.sum "$here/build.sh"; find . -path ./runtime -prune -o -path ./flannel -prune -o -path ./platform -prune -o -path ./traefik -prune -o -path './kube-*' -prune -o -type f \( -name '*.go' -o -name go.mod -o -name go.sum \) -print | sort | xargs cat; go version; } | sha256sum | cut -c1-16)
out=$cache/$set-$key
if [ -f "$out/.complete" ]; then
	echo "$out"
	exit 0
fi
[ -z "${BUILD_SH_CACHED_ONLY:-}" ] || exit 1
mkdir -p "$cache"
exec 9>"$cache/.lock"
flock 9
if [ -f "$out/.complete" ]; then # built while we waited
	echo "$out"
	exit 0
fi
tmp=$cache/.build-$set-$key
rm -rf "$tmp"
mkdir -p "$tmp"
began=$SECONDS
# The compiler collects garbage less often: 13 % less wall time for a cold
# kubectl on 2 cores (209 s -> 182 s; GOGC=off: 197 s), at 0.7 GB per compile.
export GOGC=${GOGC:-400}

build_kube() {
	local minor=${set#v1.} ldflags="-s -w" p cmds=()
	minor=${minor%%.*}
	for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
		# Without them the server says v0.0.0-master+$Format:%H$, which kubectl,
		# kubeadm and Helm's kubeVersion checks cannot parse.
		ldflags+=" -X $p.gitVersion=$set -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean -X $p.buildDate=2026-01-01T00:00:00Z"
	done
	for p in kube-apiserver kube-controller-manager kube-scheduler kubectl kubelet kubeadm kube-proxy; do
		cmds+=("k8s.io/kubernetes/cmd/$p")
	done
	cmds+=(./cmd/etcd)
	# etcd's tools where the module has them (registry.k8s.io/etcd ships
	# them beside the server; gpukit's etcd backup and restore run them)
	if go list -m go.etcd.io/etcd/etcdutl/v3 >/dev/null 2>&1; then cmds+=(go.etcd.io/etcd/etcdctl/v3 go.etcd.io/etcd/etcdutl/v3); fi
	if [ "$set" = "$KUBE_VERSION" ]; then cmds+=(sigs.k8s.io/kwok/cmd/kwok ./cmd/kube-env ./cmd/pause); fi
	echo "build.sh: building Kubernetes $set into $out (cold: about 6 minutes)" >&2
	CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$tmp/" "${cmds[@]}" >&2
	go list -m -f '{{.Version}}' go.etcd.io/etcd/server/v3 | sed 's/^v//' >"$tmp/etcd-version"
	# registry.k8s.io/NAME:TAG lines; offline, since the version is given
	"$tmp/kubeadm" config images list --kubernetes-version "$set" >"$tmp/images"
	if [ "$set" = "$KUBE_VERSION" ]; then
		local stages f
		stages=$(go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)/kustomize/stage
		for f in "$stages"/node/fast/node-initialize.yaml "$stages"/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml "$stages"/pod/general/pod-*.yaml; do
			printf -- '---\n'
			cat "$f"
		done >"$tmp/kwok-stages.yaml"
	fi
}

build_runtime() {
	local v m
	echo "build.sh: building the lab runtime (containerd, runc, crictl, coredns) into $out (cold: about 5 minutes)" >&2
	v=$(modversion . github.com/containerd/containerd/v2)
	CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X github.com/containerd/containerd/v2/version.Version=$v -X github.com/containerd/containerd/v2/version.Revision=gpukit-lab" \
		-o "$tmp/" github.com/containerd/containerd/v2/cmd/containerd github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2 github.com/containerd/containerd/v2/cmd/ctr >&2
	# runc needs cgo for seccomp (libseccomp-dev); its Makefile's libpathrs tag
	# needs a Rust library Debian does not ship.
	CGO_ENABLED=1 go build -trimpath -tags "seccomp urfave_cli_no_docs" -ldflags "-s -w -X main.extraVersion=+gpukit-lab" -o "$tmp/runc" github.com/opencontainers/runc >&2
	CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X sigs.k8s.io/cri-tools/pkg/version.Version=$(modversion . sigs.k8s.io/cri-tools)" -o "$tmp/" sigs.k8s.io/cri-tools/cmd/crictl >&2
	# CoreDNS without its cloud DNS providers and tracer (cmd/coredns): 477 packages fewer
	CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$tmp/coredns" ./cmd/coredns >&2
	for m in github.com/containerd/containerd/v2 github.com/opencontainers/runc sigs.k8s.io/cri-tools github.com/coredns/coredns; do
		printf '%s %s\n' "${m%/v2}" "$(modversion . "$m")"
	done | sed 's|^[^ ]*/||' >"$tmp/versions"
	# the upstream unit, for the containerd package
	cp "$(go list -m -f '{{.Dir}}' github.com/containerd/containerd/v2)/containerd.service" "$tmp/"
	chmod 644 "$tmp/containerd.service"
}

build_flannel() {
	local v p
	v=$(modversion . github.com/flannel-io/flannel)
	p=$(cd cni && modversion . github.com/containernetworking/plugins)
	echo "build.sh: building flannel $v (flanneld, install-conf, the CNI plugin) into $out (cold: about 3 minutes)" >&2
	# cgo for the udp backend, as flannel's Makefile builds it; static, so the
	# image needs no libc; netgo and osusergo keep glibc's NSS out.
	CGO_ENABLED=1 go build -trimpath -tags "netgo osusergo" -ldflags "-s -w -X github.com/flannel-io/flannel/pkg/version.Version=$v -extldflags -static" -o "$tmp/flanneld" github.com/flannel-io/flannel >&2
	CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$tmp/install-conf" github.com/flannel-io/flannel/cmd/install_conf >&2
	CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$tmp/cp" ./cmd/cp >&2
	(cd cni && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$tmp/flannel" github.com/containernetworking/plugins/plugins/meta/flannel) >&2
	printf 'flannel %s\ncni-plugins %s\n' "$v" "$p" >"$tmp/versions"
}

build_platform() {
	local v p o n
	v=$(modversion . github.com/prometheus/statsd_exporter)
	p=$(modversion . github.com/prometheus/prometheus)
	echo "build.sh: building statsd_exporter $v, Prometheus (module $p) and prometheus-operator into $out (cold: about 8 minutes)" >&2
	CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X github.com/prometheus/common/version.Version=${v#v}" -o "$tmp/" github.com/prometheus/statsd_exporter >&2
	# The module's v0.3XY.Z is Prometheus 3.XY.Z; no web UI assets (the
	# API is what tests use).
	CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X github.com/prometheus/common/version.Version=${p#v}" -o "$tmp/" github.com/prometheus/prometheus/cmd/prometheus >&2
	o=$(cd operator && modversion . github.com/prometheus-operator/prometheus-operator)
	(cd operator && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X github.com/prometheus/common/version.Version=${o#v}" -o "$tmp/prometheus-operator" github.com/prometheus-operator/prometheus-operator/cmd/operator) >&2
	# The sidecar and init container the operator adds to each Prometheus pod.
	(cd operator && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X github.com/prometheus/common/version.Version=${o#v}" -o "$tmp/prometheus-config-reloader" github.com/prometheus-operator/prometheus-operator/cmd/prometheus-config-reloader) >&2
	# The swarm platform's node exporter.
	n=$(modversion . github.com/prometheus/node_exporter)
	CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X github.com/prometheus/common/version.Version=${n#v}" -o "$tmp/node_exporter" github.com/prometheus/node_exporter >&2
	printf 'statsd_exporter %s\nprometheus %s\nprometheus-operator %s\nnode_exporter %s\n' "$v" "$p" "$o" "$n" >"$tmp/versions"
}

build_traefik() {
	local v auth
	v=$(modversion . github.com/traefik/traefik/v3)
	echo "build.sh: building Traefik $v into $out (cold: about 4 minutes)" >&2
	# The go-http-auth stand-in: abbot's v0.4.0 from the module proxy (its
	# sum checked) with standins/go-http-auth's additions, replacing the
	# committed directory (which holds only those) through a copy of go.mod.
	auth=$(GOFLAGS=-mod=mod go mod download -json github.com/abbot/go-http-auth@v0.4.0 | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
	[ -n "$auth" ] || die "go mod download github.com/abbot/go-http-auth@v0.4.0: no directory"
	mkdir -p "$tmp/src/go-http-auth"
	find "$auth" -maxdepth 1 -name '*.go' ! -name '*_test.go' -exec cp {} "$tmp/src/go-http-auth/" \;
	cp standins/go-http-auth/* "$tmp/src/go-http-auth/"
	chmod -R u+w "$tmp/src"
	cp go.mod "$tmp/src/build.mod"
	cp go.sum "$tmp/src/build.sum"
	go mod edit -modfile="$tmp/src/build.mod" -replace "github.com/abbot/go-http-auth=$tmp/src/go-http-auth" -replace "github.com/traefik/traefik/dynamic/ext=$PWD/standins/ext"
	CGO_ENABLED=0 go build -modfile="$tmp/src/build.mod" -trimpath -ldflags "-s -w -X github.com/traefik/traefik/v3/pkg/version.Version=$v" -o "$tmp/traefik" github.com/traefik/traefik/v3/cmd/traefik >&2
	rm -rf "$tmp/src"
	printf 'traefik %s\n' "$v" >"$tmp/versions"
}

case $set in
runtime) build_runtime ;;
platform) build_platform ;;
traefik) build_traefik ;;
flannel) build_flannel ;;
*) build_kube ;;
esac
echo "built in $((SECONDS - began)) s" >"$tmp/.complete"
rm -rf "$out"
mv "$tmp" "$out"
# older builds of this set (another go.sum): the newest 2 stay; sets no
# module builds any more (an older Kubernetes) go after a week unused
# shellcheck disable=SC2012 # our own directory names: no odd characters
ls -1dt "$cache/$set"-* 2>/dev/null | tail -n +3 | xargs -r rm -rf
keep=" runtime flannel platform traefik $(versions | tr '\n' ' ')"
for d in "$cache"/v*-*; do
	v=${d##*/}
	if [ -d "$d" ] && [[ $keep != *" ${v%%-*} "* ]] && [ -n "$(find "$d" -maxdepth 0 -mtime +7)" ]; then rm -rf "$d"; fi
done
echo "build.sh: $set $(cat "$out/.complete")" >&2
echo "$out"
