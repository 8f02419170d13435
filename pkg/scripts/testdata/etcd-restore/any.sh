set -euo pipefail
export LC_ALL=C DEBIAN_FRONTEND=noninteractive

# Restores this control plane's etcd member from the snapshot gpukit
# uploaded, checked against its sha256 first: etcdutl snapshot restore into
# a new data directory (the revision bumped and compacted, so that every
# client's watch starts again), the member's data before kept in
# /var/lib/gpukit/etcd-before-restore/20261205T000000Z, the new one moved into place.
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
snap=/var/lib/gpukit/etcd-restore/snapshot.db
data=/var/lib/etcd
new="$data.gpukit-restore"
if ! echo abababababababababababababababababababababababababababababababab"  $snap" | sha256sum -c --quiet >/dev/null 2>&1; then
  echo "gpukit: $snap does not match its sha256 abababababababababababababababababababababababababababababababab: not restored" >&2
  exit 4
fi
if [ -n "$(crictl ps -q --name '^(etcd|kube-apiserver)$' 2>/dev/null)" ]; then
  echo "gpukit: etcd or the API server runs on this host: the restore stops them first" >&2
  exit 4
fi
rm -rf "$new"
args=(snapshot restore "$snap" --data-dir "$new" --name cp-1 --initial-cluster 'cp-1=https://10.0.0.10:2380,cp-2=https://10.0.0.11:2380'
  --initial-cluster-token gpukit-restore-20261205T000000Z --initial-advertise-peer-urls https://10.0.0.10:2380
  --bump-revision 1000000000 --mark-compacted)
if command -v etcdutl >/dev/null 2>&1; then
  etcdutl "${args[@]}"
else
  # the etcd image kubeadm runs ships etcdutl; containerd has it unpacked
  ctr -n k8s.io run --rm --net-host \
    --mount "type=bind,src=${snap%/*},dst=${snap%/*},options=rbind:rw" \
    --mount "type=bind,src=${data%/*},dst=${data%/*},options=rbind:rw" \
    registry.k8s.io/etcd:3.7.0-0 "gpukit-etcd-restore-$BASHPID" etcdutl "${args[@]}"
fi
before=/var/lib/gpukit/etcd-before-restore/20261205T000000Z
if [ -e "$data" ]; then
  mkdir -p "${before%/*}"
  mv "$data" "$before"
fi
mv "$new" "$data"
chmod 0700 "$data"
rm -f "$snap"
echo "gpukit: member cp-1 restored (its data before the restore: /var/lib/gpukit/etcd-before-restore/20261205T000000Z)"
