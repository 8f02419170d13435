set -euo pipefail
export LC_ALL=C DEBIAN_FRONTEND=noninteractive

# Moves this node to the cluster's new version: kubeadm upgrade node (a
# control plane's static pods; every node's kubelet configuration).
mkdir -p "$(dirname /var/log/gpukit/kubeadm-upgrade.log)"
if ! kubeadm upgrade node >/var/log/gpukit/kubeadm-upgrade.log 2>&1; then
  tail -n 25 /var/log/gpukit/kubeadm-upgrade.log >&2
  exit 1
fi
echo "gpukit: kubeadm upgrade node done ($(kubeadm version -o short))"
