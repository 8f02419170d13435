set -euo pipefail
export LC_ALL=C DEBIAN_FRONTEND=noninteractive
# Makes the NVIDIA driver's packages available: NVIDIA's CUDA repository
# (or the site's mirror of it), or the distribution's own components that
# carry them. Idempotent: a repository already set up as wanted is left as
# it is, and the package index is refreshed only after a change.
# put FILE CONTENT: writes CONTENT (and a newline) to FILE, creating its
# directory, unless FILE holds it already; true when it wrote.
put() {
  if [ "$(cat "$1" 2>/dev/null)" = "$2" ]; then return 1; fi
  mkdir -p "${1%/*}"
  printf '%s\n' "$2" >"$1"
}
changed=0
base=https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2404/x86_64/
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
if ! dpkg-query -W -f='${db:Status-Status}' cuda-keyring 2>/dev/null | grep -qx installed; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  fetch "${base}cuda-keyring_1.1-1_all.deb" "$tmp/cuda-keyring.deb"
  dpkg -i "$tmp/cuda-keyring.deb"
  changed=1
fi
# cuda-keyring names NVIDIA's own server; the source names the one wanted
# (a mirror, for an air-gapped site), signed by the same key.
list=/etc/apt/sources.list.d/cuda-ubuntu2404-x86_64.list
line="deb [signed-by=/usr/share/keyrings/cuda-archive-keyring.gpg] $base /"
if put "$list" "$line"; then changed=1; fi
if [ "$changed" = 1 ]; then apt-get update -q; fi
if [ "$changed" = 1 ]; then echo "gpukit: package sources changed"; fi
