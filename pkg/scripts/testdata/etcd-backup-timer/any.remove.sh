set -euo pipefail
export LC_ALL=C DEBIAN_FRONTEND=noninteractive

# Removes gpukit's scheduled etcd backup (the inventory no longer asks for
# it); the snapshots it took stay in /var/lib/gpukit/etcd-snapshots.
unit=gpukit-etcd-backup
files=(/usr/local/lib/gpukit/etcd-backup "/etc/systemd/system/$unit.service" "/etc/systemd/system/$unit.timer")
left=0
for f in "${files[@]}"; do if [ -e "$f" ]; then left=1; fi; done
if [ "$left" = 1 ]; then
  systemctl disable --now -q "$unit.timer" 2>/dev/null || true
  rm -f "${files[@]}"
  systemctl daemon-reload
  echo "gpukit: $unit.timer removed"
fi
