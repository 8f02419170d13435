set -euo pipefail
export LC_ALL=C DEBIAN_FRONTEND=noninteractive
# Points apt at the offline bundle's repository of this host's distribution
# (http://10.0.0.1:8480/packages/os/debian-12/), trusting the bundle's key only for it (signed-by).
# put FILE CONTENT: writes CONTENT (and a newline) to FILE, creating its
# directory, unless FILE holds it already; true when it wrote.
put() {
  if [ "$(cat "$1" 2>/dev/null)" = "$2" ]; then return 1; fi
  mkdir -p "${1%/*}"
  printf '%s\n' "$2" >"$1"
}
keyring=/usr/share/keyrings/gpukit-bundle.asc
list=/etc/apt/sources.list.d/gpukit-bundle.list
changed=0
if put "$keyring" $'-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nxjMEZ...\n-----END PGP PUBLIC KEY BLOCK-----'; then changed=1; fi
if put "$list" "deb [signed-by=$keyring] http://10.0.0.1:8480/packages/os/debian-12/ ./"; then changed=1; fi
if [ "$changed" = 1 ]; then
  # This source's index only: the host's others may be out of reach.
  apt-get update -q -o Dir::Etc::sourcelist="$list" -o Dir::Etc::sourceparts=- -o APT::Get::List-Cleanup=0
  echo "gpukit: package sources changed"
fi
