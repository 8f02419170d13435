set -euo pipefail
export LC_ALL=C DEBIAN_FRONTEND=noninteractive
# Prints the join command of a new bootstrap token that expires after
# 15m (a secret: the caller redacts it; it names the cluster CA's public
# key hash too), after uploading the control-plane certificates anew
# (they expire after two hours) under a key kubeadm makes, printed first as
# certificate-key=KEY: a secret too, so it is never an argument that a process
# list would show.
export KUBECONFIG=/etc/kubernetes/admin.conf
# kubeadm prints the key on its last line.
key=$(kubeadm init phase upload-certs --upload-certs | tail -n 1)
printf 'certificate-key=%s\n' "$key"
kubeadm token create --ttl 15m --description 'gpukit join' --print-join-command
