# An etcd snapshot before the rollout starts: a rollout that goes wrong on
# the control plane (a reboot that corrupts the member) can be undone with
# etcdutl snapshot restore. etcdctl on the host, or in kubeadm's etcd static
# pod (its data directory is the host's /var/lib/etcd).
out={{quote .Dir}}
name={{quote .Name}}
mkdir -p "$out"
chmod 0700 "$out"
pki=/etc/kubernetes/pki/etcd
args=(--endpoints=https://127.0.0.1:2379 --cacert="$pki/ca.crt" --cert="$pki/healthcheck-client.crt" --key="$pki/healthcheck-client.key")
if [ ! -f "$pki/ca.crt" ]; then
  echo "gpukit: no stacked etcd on this control plane ($pki/ca.crt is missing): snapshot an external etcd yourself" >&2
  exit 4
fi
if command -v etcdctl >/dev/null 2>&1; then
  ETCDCTL_API=3 etcdctl "${args[@]}" snapshot save "$out/$name"
else
  id=$(crictl ps --name '^etcd$' -q 2>/dev/null | head -n1)
  if [ -z "$id" ]; then
    echo "gpukit: neither etcdctl nor a running etcd container on this host" >&2
    exit 4
  fi
  crictl exec "$id" etcdctl "${args[@]}" snapshot save "/var/lib/etcd/$name"
  mv "/var/lib/etcd/$name" "$out/$name"
fi
chmod 0600 "$out/$name"
echo "gpukit: etcd snapshot $out/$name ($(stat -c %s "$out/$name") bytes)"
