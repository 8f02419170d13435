set -euo pipefail
export LC_ALL=C DEBIAN_FRONTEND=noninteractive
# An etcd snapshot of this control plane's member (kubeadm's stacked etcd),
# kept in /var/lib/gpukit/etcd-snapshots: before a rollout (undone with gpukit etcd restore if the
# control plane goes wrong), or for gpukit etcd backup to copy back. Its
# size and sha256 are printed for the copy's check.
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
out=/var/lib/gpukit/etcd-snapshots/before-driver-580.95.05-20261202T170000Z.db
etcd_snapshot "$out"
echo "gpukit: etcd snapshot $out ($(stat -c %s "$out") bytes)"
echo "sha256=$(sha256sum "$out" | cut -d' ' -f1)"
