# Installs gpukit's MIG script and the unit that runs it at every boot (the
# GPU instances do not survive a reboot), then runs it; without a layout,
# removes both and leaves the GPUs as they are.
{{template "put"}}
script=/usr/local/lib/gpukit/mig.sh
unit=/etc/systemd/system/gpukit-mig.service
{{- if .Script}}
reload=
if put "$script" {{quote .Script}}; then chmod 0755 "$script"; fi
if put "$unit" {{quote .Unit}}; then reload=1; fi
if [ -n "$reload" ]; then systemctl daemon-reload; fi
systemctl enable gpukit-mig.service >/dev/null 2>&1
bash "$script"
{{- else}}
if [ -e "$unit" ]; then
  systemctl disable gpukit-mig.service >/dev/null 2>&1 || true
  rm -f "$unit"
  systemctl daemon-reload
  echo "gpukit: removed gpukit-mig.service (no MIG layout); the GPUs keep their MIG mode and instances until their next reboot"
fi
rm -f "$script"
{{- end}}
