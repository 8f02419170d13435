set -euo pipefail
export LC_ALL=C DEBIAN_FRONTEND=noninteractive
# Prints the join command of a new bootstrap token that expires after
# 15m (a secret: the caller redacts it; it names the cluster CA's public
# key hash too).
export KUBECONFIG=/etc/kubernetes/admin.conf
kubeadm token create --ttl 15m --description 'gpukit join' --print-join-command
