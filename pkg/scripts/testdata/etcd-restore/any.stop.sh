set -euo pipefail
export LC_ALL=C DEBIAN_FRONTEND=noninteractive

# Stops this control plane for gpukit etcd restore: the static pods of etcd,
# the API server, the controller manager and the scheduler set aside
# (kept in /etc/kubernetes/gpukit-restore until the restore starts them again), then waited for
# until their containers are gone. A stop already made is left as it is.
man=/etc/kubernetes/manifests
hold=/etc/kubernetes/gpukit-restore
mkdir -p "$hold"
chmod 0700 "$hold"
for c in etcd kube-apiserver kube-controller-manager kube-scheduler; do
  if [ -f "$man/$c.yaml" ]; then mv "$man/$c.yaml" "$hold/$c.yaml"; fi
done
until=$((SECONDS + 180))
while [ -n "$(crictl ps -q --name '^(etcd|kube-apiserver)$' 2>/dev/null)" ]; do
  if [ "$SECONDS" -ge "$until" ]; then
    echo "gpukit: etcd or the API server still runs 180s after their static pods were set aside (in $hold)" >&2
    exit 1
  fi
  sleep 1
done
echo "gpukit: etcd and the API server stopped (their static pods in $hold)"
