# Reads what this host serves of an offline bundle (gpukit-bundle.service):
# the sums of its manifest, daemon, certificate, key and unit, whether it
# runs, and with .Files the manifest itself (what the host holds already).
# Changes nothing.
dir={{quote .Dir}}
sum() { if [ -f "$1" ]; then sha256sum "$1" | cut -d' ' -f1; else echo none; fi; }
echo "manifest=$(sum "$dir/bundle.json")"
echo "binary=$(sum {{quote .Binary}})"
echo "cert=$(sum {{quote .Cert}})"
echo "key=$(sum {{quote .Key}})"
echo "unit=$(sum {{quote .Unit}})"
if systemctl is-active -q gpukit-bundle.service; then echo active=yes; else echo active=no; fi
{{- if .Files}}
echo '--- manifest'
cat "$dir/bundle.json" 2>/dev/null || true
{{- end}}
