set -euo pipefail
export LC_ALL=C DEBIAN_FRONTEND=noninteractive
# Installs the NVIDIA driver at the wanted version (570: a release, or
# the newest of a branch), then holds every package of it, and keeps
# unattended upgrades away from it: a driver that changes under a running
# module gives "Driver/library version mismatch" until the next reboot.
# Only gpukit (gpukit upgrade driver) moves it.
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
# newest PKG WANT: the newest version of PKG whose upstream version is WANT
# (a release, 580.95.05), starts with it (a branch, 580) or is it with a
# repack suffix (Debian's docker.io 20.10.24+dfsg1), empty if none;
# the package index is refreshed once if nothing matches.
newest() {
  local v
  v=$(candidates "$1" "$2")
  if [ -z "$v" ] && [ -z "${refreshed:-}" ]; then
    refreshed=1
    dnf -q makecache >&2
    v=$(candidates "$1" "$2")
  fi
  printf '%s' "$v"
}
candidates() {
  dnf -q list --showduplicates --available "$1" 2>/dev/null | awk -v want="$2" '
    NF == 3 { v = $2; u = v; sub(/^[0-9]+:/, "", u) }
    NF == 3 && (index(u, want "-") == 1 || index(u, want ".") == 1 || index(u, want "+") == 1) { last = v }
    END { print last }'
}
want=570
pkgs=(cuda-drivers)
# The module stream pins the branch and the module flavor.
stream=570-dkms
if ! dnf -q module list --enabled nvidia-driver 2>/dev/null | grep -q "^nvidia-driver *$stream "; then
  dnf -y -q module reset nvidia-driver
  dnf -y -q module enable "nvidia-driver:$stream"
fi
args=()
for p in "${pkgs[@]}"; do
  v=$(newest "$p" "${drv:-$want}")
  if [ -z "$v" ]; then
    echo "gpukit: no version ${drv:-$want} of $p in this host's repositories" >&2
    exit 3
  fi
  args+=("$p-$v")
  if [ -z "${drv:-}" ]; then
    drv=${v#*:}
    drv=${drv%%-*}
  fi
done
if ! rpm -q python3-dnf-plugin-versionlock >/dev/null 2>&1; then dnf install -y -q python3-dnf-plugin-versionlock; fi
dnf -q versionlock delete 'nvidia-*' 'libnvidia-*' 'kmod-nvidia-*' 'cuda-drivers*' >/dev/null 2>&1 || true
dnf install -y -q --allowerasing "${args[@]}"
mapfile -t mine < <(rpm -qa --qf '%{NAME}-%{EPOCH}:%{VERSION}-%{RELEASE}.%{ARCH}\n' 'nvidia*' 'libnvidia*' 'kmod-nvidia*' 'cuda-drivers*' |
  sed 's/-(none):/-0:/' | grep -F -- "$drv")
dnf -q versionlock add "${mine[@]}"
echo "gpukit: locked ${#mine[@]} packages of driver $drv"
# The kernel module on disk is now this release; the one in memory changes at
# the next boot, which nvidia/reboot decides on.
mkdir -p /run/gpukit
loaded=$(cat /sys/module/nvidia/version 2>/dev/null || true)
if [ -z "$loaded" ] && [ ! -d /sys/module/nouveau ]; then
  # No driver in memory and nothing in the way: load the new one now
  # instead of rebooting.
  if modprobe nvidia 2>/dev/null; then loaded=$(cat /sys/module/nvidia/version 2>/dev/null || true); fi
fi
if [ "$loaded" != "$drv" ]; then
  echo "gpukit: driver ${loaded:-none} loaded, $drv installed: the host reboots"
  echo "driver ${loaded:-none} loaded, $drv installed" >>/run/gpukit/reboot-required
fi
