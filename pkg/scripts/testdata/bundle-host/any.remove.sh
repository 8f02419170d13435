set -euo pipefail
export LC_ALL=C DEBIAN_FRONTEND=noninteractive
# Stops serving the offline bundle from this host (gpukit reset): the
# service disabled and stopped, its unit, gpukit, the registry's certificate
# and the bundle's files removed.
if systemctl is-enabled -q gpukit-bundle.service 2>/dev/null || systemctl is-active -q gpukit-bundle.service 2>/dev/null; then
  systemctl disable -q --now gpukit-bundle.service
fi
rm -f /etc/systemd/system/gpukit-bundle.service /usr/local/lib/gpukit/gpukit /etc/gpukit/bundle/registry.pem /etc/gpukit/bundle/registry-key.pem
rm -rf --one-file-system /var/lib/gpukit/bundle
systemctl daemon-reload
echo "gpukit: the bundle is no longer served from this host"
