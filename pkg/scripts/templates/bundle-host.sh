{{- if .Remove -}}
# Stops serving the offline bundle from this host (gpukit reset): the
# service disabled and stopped, its unit, gpukit, the registry's certificate
# and the bundle's files removed.
if systemctl is-enabled -q gpukit-bundle.service 2>/dev/null || systemctl is-active -q gpukit-bundle.service 2>/dev/null; then
  systemctl disable -q --now gpukit-bundle.service
fi
rm -f {{quote .Unit}} {{quote .Binary}} {{quote .Cert}} {{quote .Key}}
rm -rf --one-file-system {{quote .Dir}}
systemctl daemon-reload
echo "gpukit: the bundle is no longer served from this host"
{{- else -}}
# {{if .ExtractOnly}}Puts a part of an offline bundle's new files in place (a tar gpukit
# uploaded; the service is (re)started after the last part).{{else}}Serves an offline bundle from this host: the files gpukit uploaded (a tar
# of those that changed, the manifest last) into the bundle's directory,
# the files the new manifest no longer lists removed ($@), and
# gpukit-bundle.service (gpukit bundle daemon) enabled and (re)started,
# then waited for on both its ports.{{end}}
dir={{quote .Dir}}
incoming={{quote .Incoming}}
{{- if not .ExtractOnly}}
restart={{if .Restart}}1{{else}}0{{end}}
{{- end}}
if [ -n "$incoming" ] && [ -f "$incoming" ]; then
  mkdir -p "$dir"
  tar -xf "$incoming" -C "$dir" --no-same-owner --no-same-permissions
  rm -f "$incoming"
{{- if not .ExtractOnly}}
  restart=1
{{- end}}
fi
{{- if .ExtractOnly}}
echo "gpukit: a part of the bundle's files in place"
{{- else}}
for f in "$@"; do rm -f -- "$dir/$f"; done
systemctl daemon-reload
systemctl enable -q gpukit-bundle.service
if [ "$restart" = 1 ] || ! systemctl is-active -q gpukit-bundle.service; then
  systemctl restart gpukit-bundle.service
fi
# Both ports answer within 30 s, or the daemon's own words say why not.
for _ in $(seq 1 60); do
  if (exec 3<>/dev/tcp/127.0.0.1/{{.Port}}) 2>/dev/null && (exec 3<>/dev/tcp/127.0.0.1/{{.RegistryPort}}) 2>/dev/null; then
    echo "gpukit: bundle served on ports {{.Port}} (packages) and {{.RegistryPort}} (images)"
    exit 0
  fi
  sleep 0.5
done
journalctl -u gpukit-bundle.service -n 20 --no-pager >&2 || true
echo "gpukit: gpukit-bundle.service does not answer on ports {{.Port}} and {{.RegistryPort}}" >&2
exit 1
{{- end}}
{{- end}}
