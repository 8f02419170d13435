set -euo pipefail
export LC_ALL=C DEBIAN_FRONTEND=noninteractive
# Says which of the bundle's package source files differ from what gpukit
# writes ("pending: ..."), and changes nothing.
# put FILE CONTENT: writes CONTENT (and a newline) to FILE, creating its
# directory, unless FILE holds it already; true when it wrote.
put() {
  if [ "$(cat "$1" 2>/dev/null)" = "$2" ]; then return 1; fi
  mkdir -p "${1%/*}"
  printf '%s\n' "$2" >"$1"
}
keyring=/usr/share/keyrings/gpukit-bundle.asc
list=/etc/apt/sources.list.d/gpukit-bundle.list
if [ "$(cat "$keyring" 2>/dev/null)" != $'-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nxjMEZ...\n-----END PGP PUBLIC KEY BLOCK-----' ]; then echo "pending: the bundle's key"; fi
if [ "$(cat "$list" 2>/dev/null)" != "deb [signed-by=$keyring] http://10.0.0.1:8480/packages/os/debian-12/ ./" ]; then echo "pending: the bundle's source"; fi
