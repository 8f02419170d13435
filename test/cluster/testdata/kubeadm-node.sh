#!/bin/bash
# kubeadm-node.sh: what an operator does by hand to make a Debian 12 host a
# kubeadm node at an air-gapped site, from its mirrors: the Kubernetes and
# Docker package repositories (signed stand-ins in the lab), Debian's mirror
# and an image registry. Run as root on the host by test/cluster's kubeadm
# lab test (no gpukit involved). Settings marked "lab:" are what lab hosts
# (systemd-nspawn, cgroup v1, no default route) need: each fixes an error
# kubeadm, kubelet or runc gave on such a host.
#
# Environment: K8S_REPO (pkgs.k8s.io-style repository URL, ending in /),
# KUBE_DEB (kubeadm/kubelet/kubectl package version), RUNTIME (docker: Docker's
# containerd.io at CONTAINERD_DEB from DOCKER_REPO; debian: Debian's
# containerd), REGISTRY (host:port of the plain-HTTP mirror), SANDBOX (pause
# image ref), NODE_IP, POD_SUBNET (this node's /24), ROUTES (other nodes'
# "subnet via ip" pairs, comma-separated).
set -euo pipefail
: "${K8S_REPO:?}" "${KUBE_DEB:?}" "${RUNTIME:?}" "${REGISTRY:?}" "${SANDBOX:?}" "${NODE_IP:?}" "${POD_SUBNET:?}"

# every step is named and bounded: on a loaded machine a hung step must say
# which it was before the test's SSH deadline kills the script silently
step() { echo "step: $* ($SECONDS s)"; }
fetch() { python3 -c 'import sys, urllib.request; sys.stdout.buffer.write(urllib.request.urlopen(sys.argv[1], timeout=30).read())' "$1"; }

step keys and sources
install -d -m 755 /etc/apt/keyrings
fetch "${K8S_REPO}Release.key" >/etc/apt/keyrings/kubernetes-apt-keyring.asc
echo "deb [signed-by=/etc/apt/keyrings/kubernetes-apt-keyring.asc] $K8S_REPO /" >/etc/apt/sources.list.d/kubernetes.list
pkgs=(kubelet="$KUBE_DEB" kubeadm="$KUBE_DEB" kubectl="$KUBE_DEB" containernetworking-plugins)
case $RUNTIME in
docker)
	: "${DOCKER_REPO:?}" "${CONTAINERD_DEB:?}"
	fetch "${DOCKER_REPO}gpg" >/etc/apt/keyrings/docker.asc
	echo "deb [arch=amd64 signed-by=/etc/apt/keyrings/docker.asc] $DOCKER_REPO bookworm stable" >/etc/apt/sources.list.d/docker.list
	pkgs+=(containerd.io="$CONTAINERD_DEB")
	;;
debian) pkgs+=(containerd) ;;
*) echo "RUNTIME must be docker or debian" >&2; exit 2 ;;
esac
log=/var/log/kubeadm-node-apt.log
step apt-get install "${pkgs[@]}"
apt=(apt-get -q -o Acquire::http::Timeout=30 -o DPkg::Lock::Timeout=60)
# lab: the Debian proxy (apt-cacher-ng) can stall a client whose index refresh
# collided with another host's in the same second ("Failure to move file ...
# out of the way"); a second update is served from its cache
update() { for _ in 1 2 3; do timeout 100 "${apt[@]}" update && return 0; echo "step: apt-get update again ($SECONDS s)"; done; return 1; }
if ! { update && DEBIAN_FRONTEND=noninteractive timeout 300 "${apt[@]}" install -y --no-install-recommends "${pkgs[@]}"; } >$log 2>&1; then
	tail -n 25 $log >&2
	exit 1
fi
apt-mark hold kubelet kubeadm kubectl >/dev/null

# containerd: the CRI plugin on (Docker's config.toml turns it off), images
# from the mirror (hosts.toml: plain HTTP), the sandbox image kubeadm names.
# lab: cgroupfs (systemd in nspawn delegates no cgroup v1 controllers),
# restrict_oom_score_adj (no CAP_SYS_RESOURCE), Debian's CNI plugin directory.
step containerd
install -d "/etc/containerd/certs.d/$REGISTRY"
printf 'server = "http://%s"\n\n[host."http://%s"]\n  capabilities = ["pull", "resolve"]\n' "$REGISTRY" "$REGISTRY" \
	>"/etc/containerd/certs.d/$REGISTRY/hosts.toml"
containerd config default >/etc/containerd/config.toml.new
sed -i -E \
	-e "s#^( *)(sandbox_image|sandbox) = .*#\\1\\2 = '$SANDBOX'#" \
	-e 's#^( *)restrict_oom_score_adj = .*#\1restrict_oom_score_adj = true#' \
	-e 's#^( *)SystemdCgroup = .*#\1SystemdCgroup = false#' \
	-e "s#^( *)bin_dir = \"/opt/cni/bin\"#\\1bin_dir = '/usr/lib/cni'#" \
	-e "s#^( *)bin_dirs = \\['/opt/cni/bin'\\]#\\1bin_dirs = ['/usr/lib/cni']#" \
	-e "s#^( *)config_path = (''|\"\")\$#\\1config_path = '/etc/containerd/certs.d'#" \
	/etc/containerd/config.toml.new
mv /etc/containerd/config.toml.new /etc/containerd/config.toml
if ! timeout 120 systemctl restart containerd; then
	systemctl status containerd --no-pager -l | tail -n 15 >&2
	exit 1
fi
printf 'runtime-endpoint: unix:///run/containerd/containerd.sock\nimage-endpoint: unix:///run/containerd/containerd.sock\n' >/etc/crictl.yaml

# pod network without a CNI image: a bridge per node, host-local addresses,
# routes to the other nodes' pod subnets
step pod network
sysctl -qw net.ipv4.ip_forward=1
install -d /etc/cni/net.d
cat >/etc/cni/net.d/10-lab.conflist <<EOF
{"cniVersion": "0.4.0", "name": "lab",
 "plugins": [
  {"type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": false,
   "ipam": {"type": "host-local", "ranges": [[{"subnet": "$POD_SUBNET"}]], "routes": [{"dst": "0.0.0.0/0"}]}},
  {"type": "portmap", "capabilities": {"portMappings": true}}]}
EOF
IFS=, read -ra routes <<<"${ROUTES:-}"
for r in "${routes[@]}"; do
	# shellcheck disable=SC2086 # "subnet via ip": three words on purpose
	ip route replace $r
done
# the address the other nodes reach this one at (multi-NIC hosts)
echo "KUBELET_EXTRA_ARGS=--node-ip=$NODE_IP" >/etc/default/kubelet
echo "node ready for kubeadm: $(kubeadm version -o short), $(containerd --version | cut -d' ' -f2-3)"
