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
    dnf -q makecache >&2
    v=$(candidates "$1" "$2")
  fi
  printf '%s' "$v"
}
candidates() {
  dnf -q list --showduplicates --available "$1" 2>/dev/null | awk -v want="$2" '
    NF == 3 { v = $2; u = v; sub(/^[0-9]+:/, "", u) }
    NF == 3 && (index(u, want "-") == 1 || index(u, want ".") == 1 || index(u, want "+") == 1) { last = v }
    END { print last }'
}
pkg=nvidia-fabric-manager
v=$(newest "$pkg" 580.95.05)
if [ -z "$v" ]; then
  echo "gpukit: no $pkg at driver version 580.95.05 in this host's package sources: the fabric manager must match the driver exactly" >&2
  exit 3
fi
dnf -q versionlock delete "$pkg" >/dev/null 2>&1 || true
dnf install -y -q "$pkg-$v"
dnf -q versionlock add "$pkg"
systemctl enable nvidia-fabricmanager
if [ -e /sys/module/nvidia ]; then systemctl restart nvidia-fabricmanager; fi
