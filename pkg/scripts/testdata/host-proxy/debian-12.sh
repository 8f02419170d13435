set -euo pipefail
export LC_ALL=C DEBIAN_FRONTEND=noninteractive
# Points the host's package manager, services and
# gpukit's own downloads at the site's HTTP proxy. gpukit's files:
# /etc/gpukit/proxy.env (sourced by gpukit's scripts for their downloads),
# /etc/apt/apt.conf.d/90gpukit-proxy, and a drop-in
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
apt_file=/etc/apt/apt.conf.d/90gpukit-proxy
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
env_text=$'# gpukit: spec.proxy, for gpukit\'s own downloads (gpukit reset removes this file)\nexport HTTP_PROXY=http://proxy.example.com:3128\nexport http_proxy=http://proxy.example.com:3128\nexport HTTPS_PROXY=http://proxy.example.com:3129\nexport https_proxy=http://proxy.example.com:3129\nexport NO_PROXY=.corp.example.com,registry.example.com,10.1.0.0/16,localhost,127.0.0.1,::1,gpu-01,10.0.0.11,10.244.0.0/16,10.96.0.0/12,.svc,.cluster.local\nexport no_proxy=.corp.example.com,registry.example.com,10.1.0.0/16,localhost,127.0.0.1,::1,gpu-01,10.0.0.11,10.244.0.0/16,10.96.0.0/12,.svc,.cluster.local'
apt_text=$'// gpukit: spec.proxy (gpukit reset removes this file)\nAcquire::http::Proxy "http://proxy.example.com:3128";\nAcquire::https::Proxy "http://proxy.example.com:3129";\nAcquire::http::Proxy::registry.example.com "DIRECT";\nAcquire::https::Proxy::registry.example.com "DIRECT";'
unit_text=$'# gpukit: spec.proxy (gpukit reset removes this file)\n[Service]\nEnvironment="HTTP_PROXY=http://proxy.example.com:3128"\nEnvironment="http_proxy=http://proxy.example.com:3128"\nEnvironment="HTTPS_PROXY=http://proxy.example.com:3129"\nEnvironment="https_proxy=http://proxy.example.com:3129"\nEnvironment="NO_PROXY=.corp.example.com,registry.example.com,10.1.0.0/16,localhost,127.0.0.1,::1,gpu-01,10.0.0.11,10.244.0.0/16,10.96.0.0/12,.svc,.cluster.local"\nEnvironment="no_proxy=.corp.example.com,registry.example.com,10.1.0.0/16,localhost,127.0.0.1,::1,gpu-01,10.0.0.11,10.244.0.0/16,10.96.0.0/12,.svc,.cluster.local"'
if put "$env_file" "$env_text"; then chmod 0644 "$env_file"; echo "gpukit: $env_file written"; fi
if put "$apt_file" "$apt_text"; then echo "gpukit: $apt_file written"; fi
changed=
for u in "${units[@]}"; do
  f=$(dropin "$u")
  if put "$f" "$unit_text"; then
    echo "gpukit: $f written"
    changed="$changed $u"
  fi
done
if [ -n "$changed" ]; then
  systemctl daemon-reload
  for u in $changed; do restart_if_running "$u"; done
fi
