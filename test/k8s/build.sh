#!/usr/bin/env bash
# build.sh: builds the test control plane's binaries from this module (once:
# cached by a key of go.mod, go.sum, the sources and this script) and prints
# the directory that holds them. Test tooling only.
#
#   kube-apiserver kube-controller-manager kube-scheduler kubectl kwok kube-env
#   pause etcd (for the lab's images: kubeadm runs them)
#   kwok-stages.yaml (kwok's node and pod stages, from its module)
#   etcd-version (the etcd server version this module pins)
#
# A cold build takes about 5 minutes and 2-3 GB of memory per link step on 2
# cores; a second build never runs at once (flock). The cache lives outside
# the work tree: $GPUKIT_K8S_CACHE (default /var/tmp/gpukit-k8s/bin).
set -euo pipefail
cd "$(dirname "$0")"
export PATH=/usr/local/go/bin:$PATH
# The one place that names the Kubernetes version: it must be the go.mod's.
KUBE_VERSION=v1.36.3
cache=${GPUKIT_K8S_CACHE:-/var/tmp/gpukit-k8s/bin}
mod_version=$(awk '$1 == "k8s.io/kubernetes" { print $2; exit }' go.mod)
if [ "$mod_version" != "$KUBE_VERSION" ]; then
	echo "build.sh: go.mod has k8s.io/kubernetes $mod_version, build.sh $KUBE_VERSION: change both" >&2
	exit 1
fi
key=$({ cat go.mod go.sum build.sh; find cmd -type f -name '*.go' | sort | xargs cat; go version; } | sha256sum | cut -c1-16)
out=$cache/$KUBE_VERSION-$key
if [ -f "$out/.complete" ]; then
	echo "$out"
	exit 0
fi
mkdir -p "$cache"
exec 9>"$cache/.lock"
flock 9
if [ -f "$out/.complete" ]; then # built while we waited
	echo "$out"
	exit 0
fi
minor=${KUBE_VERSION#v1.}
minor=${minor%%.*}
ldflags="-s -w"
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
	# Without them the server says v0.0.0-master+$Format:%H$, which kubectl and
	# Helm's kubeVersion checks cannot parse.
	ldflags+=" -X $p.gitVersion=$KUBE_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean -X $p.buildDate=2026-01-01T00:00:00Z"
done
tmp=$cache/.build-$key
rm -rf "$tmp"
mkdir -p "$tmp"
began=$SECONDS
echo "build.sh: building Kubernetes $KUBE_VERSION test binaries into $out (cold: about 5 minutes)" >&2
CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$tmp/" \
	k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
	k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubectl \
	sigs.k8s.io/kwok/cmd/kwok ./cmd/kube-env ./cmd/pause ./cmd/etcd >&2
stages=$(go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)/kustomize/stage
for f in "$stages"/node/fast/node-initialize.yaml "$stages"/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml "$stages"/pod/general/pod-*.yaml; do
	printf -- '---\n'
	cat "$f"
done >"$tmp/kwok-stages.yaml"
go list -m -f '{{.Version}}' go.etcd.io/etcd/server/v3 | sed 's/^v//' >"$tmp/etcd-version"
echo "built in $((SECONDS - began)) s" >"$tmp/.complete"
rm -rf "$out"
mv "$tmp" "$out"
# older builds of this cache (another go.sum): the newest 3 stay
# shellcheck disable=SC2012 # our own directory names: no odd characters
ls -1dt "$cache"/v*-* 2>/dev/null | tail -n +4 | xargs -r rm -rf
echo "build.sh: $(cat "$out/.complete")" >&2
echo "$out"
