set -euo pipefail
export LC_ALL=C DEBIAN_FRONTEND=noninteractive
# Says which proxy settings gpukit wrote are still on the host, one
# "pending: ..." line each, and changes nothing. gpukit's files:
# /etc/gpukit/proxy.env (sourced by gpukit's scripts for their downloads),
# two marked lines in /etc/dnf/dnf.conf, and a drop-in
# 90-gpukit-proxy.conf for each of containerd, kubelet. A running
# service takes its new environment by a restart, except dockerd while
# containers run on it (swarm has no live-restore: they would stop).
# put FILE CONTENT: writes CONTENT (and a newline) to FILE, creating its
# directory, unless FILE holds it already; true when it wrote.
put() {
  if [ "$(cat "$1" 2>/dev/null)" = "$2" ]; then return 1; fi
  mkdir -p "${1%/*}"
  printf '%s\n' "$2" >"$1"
}
env_file=/etc/gpukit/proxy.env
dnf_conf=/etc/dnf/dnf.conf
dnf_mark='# gpukit: spec.proxy (gpukit reset removes the next line)'
units=(containerd kubelet)
dropin() { echo "/etc/systemd/system/$1.service.d/90-gpukit-proxy.conf"; }
# restart_if_running UNIT: a running service takes its new environment.
restart_if_running() {
  systemctl is-active -q "$1" 2>/dev/null || return 0
  if [ "$1" = docker ] && [ -n "$(docker ps -q 2>/dev/null | head -n 1)" ]; then
    echo "gpukit: dockerd keeps its old proxy environment until its next restart: containers run on it"
    return 0
  fi
  systemctl restart "$1"
  echo "gpukit: $1 restarted"
}
if [ -e "$env_file" ]; then echo "pending: $env_file present"; fi
for u in "${units[@]}"; do
  f=$(dropin "$u")
  if [ -e "$f" ]; then echo "pending: $f present"; fi
done
if grep -qxF "$dnf_mark" "$dnf_conf" 2>/dev/null; then echo "pending: proxy in $dnf_conf"; fi
