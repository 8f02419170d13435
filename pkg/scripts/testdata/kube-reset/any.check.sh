set -euo pipefail
export LC_ALL=C DEBIAN_FRONTEND=noninteractive
# Says what a Kubernetes reset would undo on the host, one "pending: ..." line
# each, and changes nothing: kubeadm reset (the node's containers, the kubelet's and
# etcd's state, the certificates and kubeconfigs), the pod network's
# leftovers (CNI configuration and state, the cni0/flannel interfaces, the
# KUBE-, CNI- and FLANNEL rules and chains of iptables; the host's own rules
# stay), the registry mirror's hosts.toml files and containerd's
# config.toml as it was before gpukit (kept under /var/lib/gpukit/kubernetes/originals); containerd
# restarts when its configuration changed. Packages stay installed.
# change WHAT CMD...: says WHAT is pending.
change() {
  local what=$1
  shift
  echo "pending: $what"
}
kubeadm_reset() {
  kubeadm reset -f --cri-socket unix:///run/containerd/containerd.sock >/var/log/gpukit/kubeadm-reset.log 2>&1 || {
    tail -n 20 /var/log/gpukit/kubeadm-reset.log >&2
    return 1
  }
}
mkdir -p /var/log/gpukit
if command -v kubeadm >/dev/null 2>&1 && { [ -e /etc/kubernetes/kubelet.conf ] || [ -e /etc/kubernetes/manifests/kube-apiserver.yaml ] || [ -d /var/lib/etcd/member ]; }; then
  change "kubeadm reset" kubeadm_reset
fi
rm_cni() { rm -rf /etc/cni/net.d/* /var/lib/cni; }
if [ -n "$(ls -A /etc/cni/net.d 2>/dev/null)" ] || [ -d /var/lib/cni ]; then change "CNI configuration and state removed" rm_cni; fi
for dev in cni0 flannel.1 flannel-v6.1; do
  if [ -e "/sys/class/net/$dev" ]; then change "$dev deleted" ip link delete "$dev"; fi
done
# kube_rules TOOL: the Kubernetes, CNI and flannel lines of TOOL-save.
kube_rules() { "$1-save" 2>/dev/null | grep -E -- '(KUBE-|CNI-|FLANNEL)' || true; }
drop_rules() { "$1-save" | grep -vE -- '(KUBE-|CNI-|FLANNEL)' | "$1-restore"; }
for tool in iptables ip6tables; do
  if command -v "$tool-save" >/dev/null 2>&1 && [ -n "$(kube_rules "$tool")" ]; then change "$tool: Kubernetes, CNI and flannel rules removed" drop_rules "$tool"; fi
done
rm_hosts() { rm -f "$1"; rmdir "${1%/*}" 2>/dev/null || true; }
for f in /etc/containerd/certs.d/*/hosts.toml; do
  if [ -f "$f" ] && head -n 1 "$f" | grep -q '^# written by gpukit'; then change "$f removed" rm_hosts "$f"; fi
done
backup=/var/lib/gpukit/kubernetes/originals
config=/etc/containerd/config.toml
restore_config() { cp -p "$backup/config.toml" "$config" && rm -f "$backup/config.toml" && systemctl restart containerd; }
remove_config() { rm -f "$config" "$backup/config.toml.absent" && systemctl restart containerd; }
if [ -e "$backup/config.toml" ]; then
  change "$config restored" restore_config
elif [ -e "$backup/config.toml.absent" ]; then
  change "$config removed (gpukit wrote it)" remove_config
fi
