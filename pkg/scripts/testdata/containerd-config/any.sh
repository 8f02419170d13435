set -euo pipefail
export LC_ALL=C DEBIAN_FRONTEND=noninteractive
# Writes containerd's configuration: $1 is config.toml, rendered by gpukit
# from the host's own for the installed containerd; then come pairs of a
# registry's hosts.toml (or a mirror's ca.crt) path and content, readable by
# root only (a hosts.toml may hold the mirror's login). The first time gpukit changes
# config.toml it keeps the original under /var/lib/gpukit/kubernetes/originals. containerd restarts
# only when config.toml changed (hosts.toml files are read at every pull).
# put FILE CONTENT: writes CONTENT (and a newline) to FILE, creating its
# directory, unless FILE holds it already; true when it wrote.
put() {
  if [ "$(cat "$1" 2>/dev/null)" = "$2" ]; then return 1; fi
  mkdir -p "${1%/*}"
  printf '%s\n' "$2" >"$1"
}
backup=/var/lib/gpukit/kubernetes/originals
config=/etc/containerd/config.toml
changed=0
if [ "$(cat "$config" 2>/dev/null)" != "$1" ]; then
  b="$backup/config.toml"
  if [ ! -e "$b" ] && [ ! -e "$b.absent" ]; then
    mkdir -p "$backup"
    if [ -e "$config" ]; then cp -p "$config" "$b"; else : >"$b.absent"; fi
  fi
  put "$config" "$1"
  echo "gpukit: $config written"
  changed=1
fi
shift
declare -A wanted=()
while [ $# -ge 2 ]; do
  wanted[$1]=1
  if (umask 077 && put "$1" "$2"); then echo "gpukit: $1 written"; fi
  chmod 0600 "$1"
  shift 2
done
# files gpukit wrote for a mirror the inventory no longer names
for f in /etc/containerd/certs.d/*/hosts.toml /etc/containerd/certs.d/*/ca.crt; do
  if [ -f "$f" ] && [ -z "${wanted[$f]:-}" ] && head -n 1 "$f" | grep -q '^# written by gpukit'; then
    rm -f "$f"
    rmdir "${f%/*}" 2>/dev/null || true
    echo "gpukit: $f removed"
  fi
done
put /etc/crictl.yaml $'runtime-endpoint: unix:///run/containerd/containerd.sock\nimage-endpoint: unix:///run/containerd/containerd.sock' || true
systemctl enable -q containerd
if [ "$changed" = 1 ] || ! systemctl is-active -q containerd; then systemctl restart containerd; fi
for _ in $(seq 1 50); do
  if ctr version >/dev/null 2>&1; then break; fi
  sleep 0.2
done
echo "gpukit: containerd $(containerd --version | awk '{print $3}')"
