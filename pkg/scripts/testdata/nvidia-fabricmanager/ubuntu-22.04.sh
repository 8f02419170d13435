set -euo pipefail
export LC_ALL=C DEBIAN_FRONTEND=noninteractive
# NVSwitch systems (HGX, DGX) need the fabric manager, at exactly the
# driver's version, before their GPUs can talk to each other (CUDA fails
# with "system not yet initialized" without it).
# newest PKG WANT: the newest version of PKG whose upstream version is WANT
# (a release, 580.95.05), starts with it (a branch, 580) or is it with a
# repack suffix (Debian's docker.io 20.10.24+dfsg1), empty if none;
# the package index is refreshed once if nothing matches.
newest() {
  local v
  v=$(candidates "$1" "$2")
  if [ -z "$v" ] && [ -z "${refreshed:-}" ]; then
    refreshed=1
    apt-get update -q >&2
    v=$(candidates "$1" "$2")
  fi
  printf '%s' "$v"
}
candidates() {
  apt-cache madison "$1" 2>/dev/null | awk -F'|' -v want="$2" '
    { v = $2; gsub(/ /, "", v); u = v; sub(/^[0-9]+:/, "", u) }
    index(u, want "-") == 1 || index(u, want ".") == 1 || index(u, want "+") == 1 { print v; exit }'
}
pkg=nvidia-fabricmanager
v=$(newest "$pkg" 580.95.05)
if [ -z "$v" ]; then
  echo "gpukit: no $pkg at driver version 580.95.05 in this host's package sources: the fabric manager must match the driver exactly" >&2
  exit 3
fi
apt-mark unhold "$pkg" >/dev/null 2>&1 || true
apt-get install -y -q --no-install-recommends --allow-downgrades "$pkg=$v"
apt-mark hold "$pkg" >/dev/null
systemctl enable nvidia-fabricmanager
if [ -e /sys/module/nvidia ]; then systemctl restart nvidia-fabricmanager; fi
