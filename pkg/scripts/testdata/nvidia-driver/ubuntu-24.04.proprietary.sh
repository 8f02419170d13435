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
    apt-get update -q >&2
    v=$(candidates "$1" "$2")
  fi
  printf '%s' "$v"
}
candidates() {
  apt-cache madison "$1" 2>/dev/null | awk -F'|' -v want="$2" '
    { v = $2; gsub(/ /, "", v); u = v; sub(/^[0-9]+:/, "", u) }
    index(u, want "-") == 1 || index(u, want ".") == 1 || index(u, want "+") == 1 { print v; exit }'
}
want=570
pkgs=(cuda-drivers)
# The first package decides the release (the newest of a branch); the
# others are taken at exactly that release, so that the set fits together
# (a security update may carry some of the driver's packages and not others).
args=()
for p in "${pkgs[@]}"; do
  v=$(newest "$p" "${drv:-$want}")
  if [ -z "$v" ]; then
    echo "gpukit: no version ${drv:-$want} of $p in this host's package sources (available: $(apt-cache madison "$p" 2>/dev/null | awk -F'|' '{gsub(/ /, "", $2); printf "%s ", $2}'))" >&2
    exit 3
  fi
  args+=("$p=$v")
  if [ -z "${drv:-}" ]; then
    drv=${v#*:}
    drv=${drv%%-*}
  fi
done
# Pin every package of this release (every package whose version is the
# release's - only the driver's are): apt resolves dependencies with the
# newest versions of the repository otherwise, and a repository holds several
# releases of the driver, or a security update of some of its packages (what
# NVIDIA's pinning packages do, for any package name of any packaging).
re=${drv//./\\.}
cat >/etc/apt/preferences.d/gpukit-nvidia-driver <<PIN
# Written by gpukit: the NVIDIA driver stays at $drv; gpukit upgrade driver moves it.
Package: /^[a-z0-9]/
Pin: version /^([0-9]+:)?$re-/
Pin-Priority: 1001
PIN
# What is held at the release gpukit installed before is unheld and named in
# the install, so that it follows - packages the driver only recommends, such
# as nvidia-persistenced, too; the pin gives each this release where there is
# one. Found by release, not by name: packagings name their packages apart.
mkdir -p /var/lib/gpukit
state=/var/lib/gpukit/nvidia-driver.release
at_release() { # at_release RELEASE: the installed packages of that release
  dpkg-query -W -f='${Package} ${Version} ${db:Status-Status}\n' |
    awk -v d="$1" '$3 == "installed" { u = $2; sub(/^[0-9]+:/, "", u); if (index(u, d "-") == 1) print $1 }'
}
held=()
if [ -s "$state" ]; then
  mapfile -t held < <(sort <(apt-mark showhold | sort -u) <(at_release "$(cat "$state")" | sort -u) | uniq -d)
fi
if [ ${#held[@]} -gt 0 ]; then
  apt-mark unhold "${held[@]}" >/dev/null
  for p in "${held[@]}"; do
    case " ${pkgs[*]} " in *" $p "*) ;; *) args+=("$p") ;; esac
  done
fi
apt-get install -y -q --no-install-recommends --allow-downgrades "${args[@]}"
# Hold every installed package of this release, and remember the release.
mapfile -t mine < <(at_release "$drv")
apt-mark hold "${mine[@]}" >/dev/null
printf '%s\n' "$drv" >"$state"
echo "gpukit: held ${#mine[@]} packages of driver $drv"
cat >/etc/apt/apt.conf.d/51gpukit-nvidia <<'CONF'
// Written by gpukit. The NVIDIA driver changes only through `gpukit upgrade
// driver`: an unattended upgrade would leave the running kernel module and the
// new libraries apart ("Driver/library version mismatch").
Unattended-Upgrade::Package-Blacklist {
    "nvidia-";
    "libnvidia-";
    "libcuda";
    "libnvcuvid";
    "libnvoptix";
    "lib(gl1|egl|gles|glx|glvnd0)-nvidia";
    "cuda-drivers";
    "firmware-nvidia-";
    "xserver-xorg-video-nvidia";
};
CONF
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
