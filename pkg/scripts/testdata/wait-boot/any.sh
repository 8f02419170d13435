set -euo pipefail
export LC_ALL=C DEBIAN_FRONTEND=noninteractive
# Waits until the host has finished booting: SSH answers early, and the
# units that start after it (nvidia-persistenced, the fabric manager) must be
# up before the host is verified. Read-only; "degraded" is reported, not
# fatal here (verification says what is wrong).
if [ -d /run/systemd/system ]; then
  state=$(timeout 300 systemctl is-system-running --wait 2>/dev/null || true)
  echo "system ${state:-still starting after 300s}"
  if [ "$state" = degraded ]; then systemctl --failed --no-legend --plain | head -n 20; fi
fi
