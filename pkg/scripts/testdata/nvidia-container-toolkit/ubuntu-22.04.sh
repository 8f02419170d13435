set -euo pipefail
export LC_ALL=C DEBIAN_FRONTEND=noninteractive
# Installs the NVIDIA Container Toolkit 1.20.0, its four packages
# pinned to that one version, and points the container runtime at it when
# the runtime is already installed (the runtime's own phase does it
# otherwise). nvidia-ctk merges its settings into the runtime's
# configuration: the user's other settings stay.
# fetch URL FILE: downloads with whatever the host has (curl, wget, python3).
fetch() {
  if command -v curl >/dev/null 2>&1; then
    curl -fsSL --retry 3 -o "$2" "$1"
  elif command -v wget >/dev/null 2>&1; then
    wget -q -O "$2" "$1"
  elif command -v python3 >/dev/null 2>&1; then
    python3 -c 'import sys, urllib.request; urllib.request.urlretrieve(sys.argv[1], sys.argv[2])' "$1" "$2"
  else
    echo "gpukit: cannot download $1: no curl, wget or python3 on this host" >&2
    return 1
  fi
}
# put FILE CONTENT: writes CONTENT (and a newline) to FILE, creating its
# directory, unless FILE holds it already; true when it wrote.
put() {
  if [ "$(cat "$1" 2>/dev/null)" = "$2" ]; then return 1; fi
  mkdir -p "${1%/*}"
  printf '%s\n' "$2" >"$1"
}
base=https://nvidia.github.io/libnvidia-container/
changed=0
keyring=/usr/share/keyrings/nvidia-container-toolkit-keyring.asc
if [ ! -s "$keyring" ]; then
  tmp=$(mktemp)
  fetch "${base}gpgkey" "$tmp"
  install -m 0644 "$tmp" "$keyring"
  rm -f "$tmp"
  changed=1
fi
list=/etc/apt/sources.list.d/nvidia-container-toolkit.list
line="deb [signed-by=$keyring] ${base}stable/deb/amd64 /"
if put "$list" "$line"; then changed=1; fi
if [ "$changed" = 1 ]; then apt-get update -q; fi
v=1.20.0-1
pkgs=(nvidia-container-toolkit nvidia-container-toolkit-base libnvidia-container-tools libnvidia-container1)
apt-mark unhold "${pkgs[@]}" >/dev/null 2>&1 || true
apt-get install -y -q --no-install-recommends --allow-downgrades -o Dpkg::Options::=--force-confold \
  "${pkgs[@]/%/=$v}"
apt-mark hold "${pkgs[@]}" >/dev/null
nvidia-ctk --version | head -n 1
# config_sum FILE...: a checksum of the runtime's configuration as it is now
# (files not there yet count as empty: nvidia-ctk creates them).
config_sum() { { cat "$@" 2>/dev/null || true; } | sha256sum; }
if command -v containerd >/dev/null 2>&1; then
  runtime=containerd
  files=(/etc/containerd/config.toml /etc/containerd/conf.d/99-nvidia.toml)
  before=$(config_sum "${files[@]}")
  nvidia-ctk runtime configure --runtime="$runtime"
  if [ "$(config_sum "${files[@]}")" != "$before" ]; then
    echo "gpukit: $runtime configured for the NVIDIA runtime; restarting it"
    systemctl restart containerd
  fi
fi
if command -v dockerd >/dev/null 2>&1; then
  runtime=docker
  files=(/etc/docker/daemon.json)
  before=$(config_sum "${files[@]}")
  nvidia-ctk runtime configure --runtime="$runtime"
  if [ "$(config_sum "${files[@]}")" != "$before" ]; then
    echo "gpukit: $runtime configured for the NVIDIA runtime; restarting it"
    systemctl restart docker
  fi
fi
