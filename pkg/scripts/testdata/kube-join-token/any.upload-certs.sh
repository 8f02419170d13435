set -euo pipefail
export LC_ALL=C DEBIAN_FRONTEND=noninteractive
# Prints the join command of a new bootstrap token that expires after
# 15m (a secret: the caller redacts it; it names the cluster CA's public
# key hash too), after uploading the control-plane certificates anew
# (they expire after two hours) under the key $1.
export KUBECONFIG=/etc/kubernetes/admin.conf
kubeadm init phase upload-certs --upload-certs --certificate-key "$1" >/dev/null
kubeadm token create --ttl 15m --description 'gpukit join' --print-join-command
