set -euo pipefail
export LC_ALL=C DEBIAN_FRONTEND=noninteractive
# Removes the offline bundle's package source gpukit added.
# put FILE CONTENT: writes CONTENT (and a newline) to FILE, creating its
# directory, unless FILE holds it already; true when it wrote.
put() {
  if [ "$(cat "$1" 2>/dev/null)" = "$2" ]; then return 1; fi
  mkdir -p "${1%/*}"
  printf '%s\n' "$2" >"$1"
}
keyring=/usr/share/keyrings/gpukit-bundle.asc
list=/etc/apt/sources.list.d/gpukit-bundle.list
if [ -e "$list" ] || [ -e "$keyring" ]; then
  rm -f "$list" "$keyring"
  echo "gpukit: the bundle's package source removed"
fi
