set -euo pipefail
export LC_ALL=C DEBIAN_FRONTEND=noninteractive

# Moves the cluster's control plane to v1.37.2 on the first control
# plane: kubeadm upgrade apply (the static pods, etcd, the cluster's
# configuration, CoreDNS and kube-proxy). kubeadm's output goes to
# /var/log/gpukit/kubeadm-upgrade.log; its last lines are printed when it fails.
mkdir -p "$(dirname /var/log/gpukit/kubeadm-upgrade.log)"
if ! kubeadm upgrade apply v1.37.2 --yes --ignore-preflight-errors=SystemVerification >/var/log/gpukit/kubeadm-upgrade.log 2>&1; then
  tail -n 25 /var/log/gpukit/kubeadm-upgrade.log >&2
  exit 1
fi
grep -E '^\[upgrade\] (SUCCESS|The control plane instance)' /var/log/gpukit/kubeadm-upgrade.log || true
echo "gpukit: kubeadm upgrade apply v1.37.2 done"
