set -euo pipefail
export LC_ALL=C DEBIAN_FRONTEND=noninteractive
# Installs the NVIDIA Container Toolkit 1.20.0, its four packages
# pinned to that one version, and points the container runtime at it when
# the runtime is already installed (the runtime's own phase does it
# otherwise). nvidia-ctk merges its settings into the runtime's
# configuration: the user's other settings stay.
# The package managers run in a session of their own, their output kept in a
# file on the host and streamed from it: when this script ends early (the
# operator's connection lost, a step's deadline), dpkg, dnf and the DKMS
# builds they start finish instead of dying half-way, and the next run finds
# the work done. dpkg's lock is waited for, up to 10 minutes (apt-daily holds
# it right after a boot); an interrupted dpkg is repaired before apt goes on;
# a configuration file the site edited is kept.
pm_err=
pm_run() {
  local log rc=0 pid out err
  mkdir -p /var/log/gpukit
  log=$(mktemp "/var/log/gpukit/packages.$(date +%Y%m%dT%H%M%S).XXXXXX")
  setsid "$@" </dev/null >"$log" 2>"$log.err" &
  pid=$!
  tail -n +1 -s 0.2 -f --pid="$pid" "$log" &
  out=$!
  tail -n +1 -s 0.2 -f --pid="$pid" "$log.err" >&2 &
  err=$!
  wait "$pid" || rc=$?
  wait "$out" "$err" || true
  pm_err=$(tail -c 2000 "$log.err")
  rm -f "$log" "$log.err"
  return "$rc"
}
# dpkg has no lock wait of its own: a lock held is waited out.
dpkg() {
  local until=$((SECONDS + 600)) rc
  while :; do
    rc=0
    pm_run dpkg --force-confdef --force-confold "$@" || rc=$?
    if [ "$rc" != 0 ] && [[ $pm_err == *lock* ]] && [ "$SECONDS" -lt "$until" ]; then
      sleep 3
      continue
    fi
    return "$rc"
  done
}
pm_repaired=
apt-get() {
  if [ -z "$pm_repaired" ] && [ -n "$(command dpkg --audit 2>/dev/null)" ]; then
    echo "gpukit: dpkg was interrupted (a run stopped half-way, a power cut): finishing it first" >&2
    dpkg --configure -a
  fi
  pm_repaired=1
  pm_run apt-get -o DPkg::Lock::Timeout=600 -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold "$@"
}
dnf() { pm_run dnf "$@"; }
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
apt-get install -y -q --no-install-recommends --allow-downgrades \
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
