set -euo pipefail
export LC_ALL=C DEBIAN_FRONTEND=noninteractive
# Serves an offline bundle from this host: the files gpukit uploaded (a tar
# of those that changed, the manifest last) into the bundle's directory,
# the files the new manifest no longer lists removed ($@), and
# gpukit-bundle.service (gpukit bundle daemon) enabled and (re)started,
# then waited for on both its ports.
dir=/var/lib/gpukit/bundle
incoming=/var/lib/gpukit/bundle.incoming.tar
restart=1
if [ -n "$incoming" ] && [ -f "$incoming" ]; then
  mkdir -p "$dir"
  tar -xf "$incoming" -C "$dir" --no-same-owner --no-same-permissions
  rm -f "$incoming"
  restart=1
fi
for f in "$@"; do rm -f -- "$dir/$f"; done
systemctl daemon-reload
systemctl enable -q gpukit-bundle.service
if [ "$restart" = 1 ] || ! systemctl is-active -q gpukit-bundle.service; then
  systemctl restart gpukit-bundle.service
fi
# Both ports answer within 30 s, or the daemon's own words say why not.
for _ in $(seq 1 60); do
  if (exec 3<>/dev/tcp/127.0.0.1/8480) 2>/dev/null && (exec 3<>/dev/tcp/127.0.0.1/8443) 2>/dev/null; then
    echo "gpukit: bundle served on ports 8480 (packages) and 8443 (images)"
    exit 0
  fi
  sleep 0.5
done
journalctl -u gpukit-bundle.service -n 20 --no-pager >&2 || true
echo "gpukit: gpukit-bundle.service does not answer on ports 8480 and 8443" >&2
exit 1
