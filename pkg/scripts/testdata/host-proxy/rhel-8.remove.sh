set -euo pipefail
export LC_ALL=C DEBIAN_FRONTEND=noninteractive
# Removes the proxy settings gpukit wrote (gpukit reset). gpukit's files:
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
reload=
for u in "${units[@]}"; do
  f=$(dropin "$u")
  if [ -e "$f" ]; then
    rm -f -- "$f"
    rmdir --ignore-fail-on-non-empty "${f%/*}"
    echo "gpukit: $f removed"
    reload="$reload $u"
  fi
done
if [ -n "$reload" ]; then
  systemctl daemon-reload
  for u in $reload; do restart_if_running "$u"; done
fi
if grep -qxF "$dnf_mark" "$dnf_conf" 2>/dev/null; then
  sed -i "\\|^$dnf_mark\$|{N;d}" "$dnf_conf"
  echo "gpukit: the proxy removed from $dnf_conf"
fi
# last: the probe reads its presence as "gpukit's proxy settings are here"
if [ -e "$env_file" ]; then rm -f -- "$env_file"; echo "gpukit: $env_file removed"; fi
