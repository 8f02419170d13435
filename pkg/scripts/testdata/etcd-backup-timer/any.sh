set -euo pipefail
export LC_ALL=C DEBIAN_FRONTEND=noninteractive

# gpukit's scheduled etcd backup on this control plane: gpukit-etcd-backup.timer
# (*-*-* 02:00:00) runs /usr/local/lib/gpukit/etcd-backup, which keeps the newest 7
# snapshots in /var/lib/gpukit/etcd-snapshots.
# put FILE CONTENT: writes CONTENT (and a newline) to FILE, creating its
# directory, unless FILE holds it already; true when it wrote.
put() {
  if [ "$(cat "$1" 2>/dev/null)" = "$2" ]; then return 1; fi
  mkdir -p "${1%/*}"
  printf '%s\n' "$2" >"$1"
}
unit=gpukit-etcd-backup
if ! systemd-analyze calendar '*-*-* 02:00:00' >/dev/null 2>&1; then
  echo "gpukit: systemd on this host does not take the schedule *-*-* 02:00:00 (spec.kubernetes.etcdBackup.schedule): see systemd.time(7)" >&2
  exit 4
fi
script=$(cat <<'GPUKIT_EOF'
#!/bin/bash
# gpukit's scheduled etcd backup (gpukit-etcd-backup.timer): a snapshot of this
# control plane's member into /var/lib/gpukit/etcd-snapshots, the newest 7 scheduled ones
# kept. Written by gpukit from the inventory's spec.kubernetes.etcdBackup.
set -euo pipefail
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
dir=/var/lib/gpukit/etcd-snapshots
etcd_snapshot "$dir/scheduled-$(date -u +%Y%m%dT%H%M%SZ).db"
ls -1 "$dir"/scheduled-*.db | sort | head -n -7 | xargs -r rm -f --
echo "gpukit: etcd snapshot taken; $(ls -1 "$dir"/scheduled-*.db | wc -l) scheduled snapshots in $dir"
GPUKIT_EOF
)
service=$(cat <<'GPUKIT_EOF'
[Unit]
Description=gpukit: etcd snapshot of this control plane (keeps 7)
After=kubelet.service

[Service]
Type=oneshot
ExecStart=/usr/local/lib/gpukit/etcd-backup
GPUKIT_EOF
)
timer=$(cat <<'GPUKIT_EOF'
[Unit]
Description=gpukit: scheduled etcd snapshots (*-*-* 02:00:00)

[Timer]
OnCalendar=*-*-* 02:00:00
RandomizedDelaySec=60
Persistent=true

[Install]
WantedBy=timers.target
GPUKIT_EOF
)
changed=0
if put /usr/local/lib/gpukit/etcd-backup "$script"; then changed=1; fi
chmod 0700 /usr/local/lib/gpukit/etcd-backup
if put "/etc/systemd/system/$unit.service" "$service"; then changed=1; fi
if put "/etc/systemd/system/$unit.timer" "$timer"; then changed=1; fi
if [ "$changed" = 1 ]; then systemctl daemon-reload; fi
systemctl enable -q "$unit.timer"
if [ "$changed" = 1 ]; then systemctl restart "$unit.timer"; else systemctl start "$unit.timer"; fi
echo "gpukit: $unit.timer ($(systemctl show -P NextElapseUSecRealtime "$unit.timer" 2>/dev/null || echo scheduled))"
