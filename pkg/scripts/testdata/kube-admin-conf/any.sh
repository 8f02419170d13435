set -euo pipefail
export LC_ALL=C DEBIAN_FRONTEND=noninteractive
# Prints the cluster's admin kubeconfig (a secret: it holds the admin's
# client key).
cat /etc/kubernetes/admin.conf
