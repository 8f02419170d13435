set -euo pipefail
export LC_ALL=C DEBIAN_FRONTEND=noninteractive
# Installs gpukit's MIG script and the unit that runs it at every boot (the
# GPU instances do not survive a reboot), then runs it; without a layout,
# removes both and leaves the GPUs as they are.
# put FILE CONTENT: writes CONTENT (and a newline) to FILE, creating its
# directory, unless FILE holds it already; true when it wrote.
put() {
  if [ "$(cat "$1" 2>/dev/null)" = "$2" ]; then return 1; fi
  mkdir -p "${1%/*}"
  printf '%s\n' "$2" >"$1"
}
script=/usr/local/lib/gpukit/mig.sh
unit=/etc/systemd/system/gpukit-mig.service
if [ -e "$unit" ]; then
  systemctl disable gpukit-mig.service >/dev/null 2>&1 || true
  rm -f "$unit"
  systemctl daemon-reload
  echo "gpukit: removed gpukit-mig.service (no MIG layout); the GPUs keep their MIG mode and instances until their next reboot"
fi
rm -f "$script"
