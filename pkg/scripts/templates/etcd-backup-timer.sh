{{- define "etcd-backup-run"}}#!/bin/bash
# gpukit's scheduled etcd backup ({{.Unit}}.timer): a snapshot of this
# control plane's member into {{.Dir}}, the newest {{.Keep}} scheduled ones
# kept. Written by gpukit from the inventory's spec.kubernetes.etcdBackup.
set -euo pipefail
{{template "etcd"}}
dir={{quote .Dir}}
etcd_snapshot "$dir/scheduled-$(date -u +%Y%m%dT%H%M%SZ).db"
ls -1 "$dir"/scheduled-*.db | sort | head -n -{{.Keep}} | xargs -r rm -f --
echo "gpukit: etcd snapshot taken; $(ls -1 "$dir"/scheduled-*.db | wc -l) scheduled snapshots in $dir"
{{- end}}
{{- define "etcd-backup-service"}}[Unit]
Description=gpukit: etcd snapshot of this control plane (keeps {{.Keep}})
After=kubelet.service

[Service]
Type=oneshot
ExecStart={{.Script}}
{{- end}}
{{- define "etcd-backup-timer"}}[Unit]
Description=gpukit: scheduled etcd snapshots ({{.OnCalendar}})

[Timer]
OnCalendar={{.OnCalendar}}
RandomizedDelaySec=60
Persistent=true

[Install]
WantedBy=timers.target
{{- end}}
{{- if eq .Mode "remove" "check-remove"}}
# Removes gpukit's scheduled etcd backup (the inventory no longer asks for
# it); the snapshots it took stay in {{.Dir}}.
unit={{quote .Unit}}
files=({{quote .Script}} "/etc/systemd/system/$unit.service" "/etc/systemd/system/$unit.timer")
left=0
for f in "${files[@]}"; do if [ -e "$f" ]; then left=1; fi; done
{{- if eq .Mode "check-remove"}}
if [ "$left" = 1 ]; then echo "pending: remove $unit.timer"; fi
{{- else}}
if [ "$left" = 1 ]; then
  systemctl disable --now -q "$unit.timer" 2>/dev/null || true
  rm -f "${files[@]}"
  systemctl daemon-reload
  echo "gpukit: $unit.timer removed"
fi
{{- end}}
{{- else}}
# gpukit's scheduled etcd backup on this control plane: {{.Unit}}.timer
# ({{.OnCalendar}}) runs {{.Script}}, which keeps the newest {{.Keep}}
# snapshots in {{.Dir}}.{{if eq .Mode "check"}} Check only: what would change.{{end}}
{{template "put"}}
unit={{quote .Unit}}
if ! systemd-analyze calendar {{quote .OnCalendar}} >/dev/null 2>&1; then
  echo "gpukit: systemd on this host does not take the schedule {{.OnCalendar}} (spec.kubernetes.etcdBackup.schedule): see systemd.time(7)" >&2
  exit 4
fi
script=$(cat <<'GPUKIT_EOF'
{{template "etcd-backup-run" .}}
GPUKIT_EOF
)
service=$(cat <<'GPUKIT_EOF'
{{template "etcd-backup-service" .}}
GPUKIT_EOF
)
timer=$(cat <<'GPUKIT_EOF'
{{template "etcd-backup-timer" .}}
GPUKIT_EOF
)
{{- if eq .Mode "check"}}
same() { [ "$(cat "$1" 2>/dev/null)" = "$2" ]; }
same {{quote .Script}} "$script" || echo "pending: write {{.Script}}"
same "/etc/systemd/system/$unit.service" "$service" || echo "pending: write $unit.service"
same "/etc/systemd/system/$unit.timer" "$timer" || echo "pending: write $unit.timer"
systemctl is-enabled -q "$unit.timer" 2>/dev/null || echo "pending: enable $unit.timer"
systemctl is-active -q "$unit.timer" 2>/dev/null || echo "pending: start $unit.timer"
{{- else}}
changed=0
if put {{quote .Script}} "$script"; then changed=1; fi
chmod 0700 {{quote .Script}}
if put "/etc/systemd/system/$unit.service" "$service"; then changed=1; fi
if put "/etc/systemd/system/$unit.timer" "$timer"; then changed=1; fi
if [ "$changed" = 1 ]; then systemctl daemon-reload; fi
systemctl enable -q "$unit.timer"
if [ "$changed" = 1 ]; then systemctl restart "$unit.timer"; else systemctl start "$unit.timer"; fi
echo "gpukit: $unit.timer ($(systemctl show -P NextElapseUSecRealtime "$unit.timer" 2>/dev/null || echo scheduled))"
{{- end}}
{{- end}}
