set -euo pipefail
export LC_ALL=C DEBIAN_FRONTEND=noninteractive
# Prepares a host for the NVIDIA driver: kernel headers and build tools for
# the RUNNING kernel (DKMS builds the module against them; headers of another
# kernel give a module that does not load after boot), and nouveau kept away
# from the GPUs. Each step checks before it changes.
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
  # made here, not by the background job's redirection: tail must find it
  : >"$log.err"
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
k=$(uname -r)
mkdir -p /run/gpukit
if [ ! -e "/lib/modules/$k/build" ]; then
  apt-get update -q
  if ! apt-cache show "linux-headers-$k" >/dev/null 2>&1; then
    echo "gpukit: no kernel headers for the running kernel $k: no package linux-headers-$k in this host's package sources." >&2
    echo "gpukit: DKMS would build the driver for another kernel, and it would not load after boot. Add a source that has linux-headers-$k, or upgrade to a kernel your sources have headers for and reboot, then run gpukit again." >&2
    exit 3
  fi
  apt-get install -y -q --no-install-recommends "linux-headers-$k"
fi
if ! dpkg-query -W -f='${db:Status-Status}' dkms 2>/dev/null | grep -qx installed; then
  if ! apt-cache show dkms >/dev/null 2>&1; then apt-get update -q; fi
  apt-get install -y -q --no-install-recommends dkms build-essential
fi

# put FILE CONTENT: writes CONTENT (and a newline) to FILE, creating its
# directory, unless FILE holds it already; true when it wrote.
put() {
  if [ "$(cat "$1" 2>/dev/null)" = "$2" ]; then return 1; fi
  mkdir -p "${1%/*}"
  printf '%s\n' "$2" >"$1"
}
conf=/etc/modprobe.d/blacklist-nouveau.conf
if put "$conf" $'blacklist nouveau\noptions nouveau modeset=0'; then
  echo "gpukit: nouveau blacklisted in $conf"
  # The initramfs may load nouveau before the root file system is mounted.
  if command -v update-initramfs >/dev/null 2>&1; then update-initramfs -u; fi
fi
if [ -d /sys/module/nouveau ]; then
  echo "gpukit: nouveau is loaded; the host reboots after the driver is installed"
  echo nouveau >>/run/gpukit/reboot-required
fi
