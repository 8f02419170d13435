set -euo pipefail
export LC_ALL=C DEBIAN_FRONTEND=noninteractive
# Keeps the GPUs initialised between jobs (persistence mode): without it the
# driver tears the GPU state down when the last process exits, and the next
# job pays seconds of initialisation and loses MIG and clock settings.
# put FILE CONTENT: writes CONTENT (and a newline) to FILE, creating its
# directory, unless FILE holds it already; true when it wrote.
put() {
  if [ "$(cat "$1" 2>/dev/null)" = "$2" ]; then return 1; fi
  mkdir -p "${1%/*}"
  printf '%s\n' "$2" >"$1"
}
dropin=/etc/systemd/system/nvidia-persistenced.service.d/gpukit.conf
want='[Service]
ExecStart=
ExecStart=/usr/bin/nvidia-persistenced --user root --persistence-mode --verbose'
# Some driver packages only recommend the daemon (Debian's nvidia-driver): it
# is installed here, at the driver's release where the repository has it (the
# driver's pin gives it that one, down as well as up), and held with the driver.
dnf install -y -q nvidia-persistenced
if put "$dropin" "$want"; then systemctl daemon-reload; fi
systemctl enable nvidia-persistenced
# A persistence daemon started before the driver loaded (fresh install,
# reboot pending) starts at the next boot.
if [ -e /sys/module/nvidia ]; then systemctl restart nvidia-persistenced; fi
