set -euo pipefail
export LC_ALL=C DEBIAN_FRONTEND=noninteractive
# Joins the cluster: kubeadm join with the configuration gpukit rendered
# ($1: it holds the bootstrap token and the certificate key; it comes on stdin
# and lives in a 0600 file only while kubeadm runs). kubeadm's output goes
# to /var/log/gpukit/kubeadm-join.log; its last lines are printed when it fails.
umask 077
mkdir -p "$(dirname /etc/kubernetes/gpukit/kubeadm-join.yaml)" "$(dirname /var/log/gpukit/kubeadm-join.log)"
trap 'rm -f /etc/kubernetes/gpukit/kubeadm-join.yaml' EXIT
printf '%s\n' "$1" >/etc/kubernetes/gpukit/kubeadm-join.yaml
if ! kubeadm join --config /etc/kubernetes/gpukit/kubeadm-join.yaml >/var/log/gpukit/kubeadm-join.log 2>&1; then
  tail -n 25 /var/log/gpukit/kubeadm-join.log >&2
  exit 1
fi
echo "gpukit: joined as a control plane"
