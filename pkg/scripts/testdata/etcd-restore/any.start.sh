set -euo pipefail
export LC_ALL=C DEBIAN_FRONTEND=noninteractive

# Starts this control plane again after gpukit etcd restore: the static
# pods set aside go back, the kubelet restarts (nothing it cached of the
# cluster before survives), and the member and this host's API server are
# waited for until healthy.
# etcd_ctl ARGS...: etcdctl against this control plane's member with
# kubeadm's health-check client certificate: the host's etcdctl, else the one
# in kubeadm's etcd static pod (registry.k8s.io/etcd ships it). Its paths are
# the container's: the host's /var/lib/etcd is mounted there as itself.
etcd_pki=/etc/kubernetes/pki/etcd
etcd_ctl() {
  local a=(--endpoints=https://127.0.0.1:2379 --cacert="$etcd_pki/ca.crt" --cert="$etcd_pki/healthcheck-client.crt" --key="$etcd_pki/healthcheck-client.key" --command-timeout=60s)
  if [ ! -f "$etcd_pki/ca.crt" ]; then
    echo "gpukit: no stacked etcd on this control plane ($etcd_pki/ca.crt is missing): an external etcd is backed up by its own tools" >&2
    return 4
  fi
  if command -v etcdctl >/dev/null 2>&1; then
    ETCDCTL_API=3 etcdctl "${a[@]}" "$@"
    return
  fi
  local id
  id=$(crictl ps --name '^etcd$' -q 2>/dev/null | head -n1)
  if [ -z "$id" ]; then
    echo "gpukit: neither etcdctl nor a running etcd container on this host" >&2
    return 4
  fi
  crictl exec "$id" etcdctl "${a[@]}" "$@"
}
# etcd_snapshot FILE: a snapshot of the member into FILE (0600), through the
# etcd container's data directory where etcdctl runs there.
etcd_snapshot() {
  local out=$1 tmp
  mkdir -p "${out%/*}"
  chmod 0700 "${out%/*}"
  if command -v etcdctl >/dev/null 2>&1; then
    etcd_ctl snapshot save "$out.part" >/dev/null
  else
    tmp=/var/lib/etcd/gpukit-snapshot.$BASHPID.db
    etcd_ctl snapshot save "$tmp" >/dev/null || { rm -f "$tmp"; return 1; }
    mv "$tmp" "$out.part"
  fi
  chmod 0600 "$out.part"
  mv "$out.part" "$out"
}
man=/etc/kubernetes/manifests
hold=/etc/kubernetes/gpukit-restore
for c in etcd kube-apiserver kube-controller-manager kube-scheduler; do
  if [ -f "$hold/$c.yaml" ]; then mv "$hold/$c.yaml" "$man/$c.yaml"; fi
done
rmdir "$hold" 2>/dev/null || true
systemctl restart kubelet
until=$((SECONDS + 300))
until etcd_ctl endpoint health >/dev/null 2>&1; do
  if [ "$SECONDS" -ge "$until" ]; then
    echo "gpukit: etcd is not healthy 300s after the restore" >&2
    etcd_ctl endpoint health >&2 || true
    exit 1
  fi
  sleep 2
done
api=$(sed -n 's/^ *- --advertise-address=//p' "$man/kube-apiserver.yaml" | head -n1):$(sed -n 's/^ *- --secure-port=//p' "$man/kube-apiserver.yaml" | head -n1)
until kubectl --kubeconfig /etc/kubernetes/admin.conf --server "https://$api" get --raw=/readyz >/dev/null 2>&1; do
  if [ "$SECONDS" -ge "$until" ]; then
    echo "gpukit: the API server at $api is not ready 300s after the restore" >&2
    exit 1
  fi
  sleep 2
done
echo "gpukit: etcd healthy, the API server at $api ready"
