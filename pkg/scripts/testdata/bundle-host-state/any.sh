set -euo pipefail
export LC_ALL=C DEBIAN_FRONTEND=noninteractive
# Reads what this host serves of an offline bundle (gpukit-bundle.service):
# the sums of its manifest, daemon, certificate, key and unit, whether it
# runs, and with .Files the manifest itself (what the host holds already).
# Changes nothing.
dir=/var/lib/gpukit/bundle
sum() { if [ -f "$1" ]; then sha256sum "$1" | cut -d' ' -f1; else echo none; fi; }
echo "manifest=$(sum "$dir/bundle.json")"
echo "binary=$(sum /usr/local/lib/gpukit/gpukit)"
echo "cert=$(sum /etc/gpukit/bundle/registry.pem)"
echo "key=$(sum /etc/gpukit/bundle/registry-key.pem)"
echo "unit=$(sum /etc/systemd/system/gpukit-bundle.service)"
if systemctl is-active -q gpukit-bundle.service; then echo active=yes; else echo active=no; fi
echo '--- manifest'
cat "$dir/bundle.json" 2>/dev/null || true
