set -euo pipefail
export LC_ALL=C DEBIAN_FRONTEND=noninteractive
# Creates the cluster on its first control plane: kubeadm init with the
# configuration gpukit rendered ($1), kept in /etc/kubernetes/gpukit/kubeadm-init.yaml (0600). kubeadm's
# output goes to /var/log/gpukit/kubeadm-init.log; its last lines are printed when it fails.
umask 077
mkdir -p "$(dirname /etc/kubernetes/gpukit/kubeadm-init.yaml)" "$(dirname /var/log/gpukit/kubeadm-init.log)"
printf '%s\n' "$1" >/etc/kubernetes/gpukit/kubeadm-init.yaml
if ! kubeadm init --config /etc/kubernetes/gpukit/kubeadm-init.yaml >/var/log/gpukit/kubeadm-init.log 2>&1; then
  tail -n 25 /var/log/gpukit/kubeadm-init.log >&2
  exit 1
fi
echo "gpukit: kubeadm init done ($(kubeadm version -o short))"
