set -euo pipefail
export LC_ALL=C DEBIAN_FRONTEND=noninteractive

# Reads the version the cluster's API server reports (kubectl with the
# admin kubeconfig), for gpukit upgrade kubernetes' check.
kubectl --kubeconfig /etc/kubernetes/admin.conf get --raw /version
