set -euo pipefail
export LC_ALL=C DEBIAN_FRONTEND=noninteractive
# NVSwitch systems (HGX, DGX) need the fabric manager, at exactly the
# driver's version, before their GPUs can talk to each other (CUDA fails
# with "system not yet initialized" without it).
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
pkg=nvidia-fabricmanager
v=$(newest "$pkg" 580.95.05)
if [ -z "$v" ]; then
  echo "gpukit: no $pkg at driver version 580.95.05 in this host's package sources: the fabric manager must match the driver exactly" >&2
  exit 3
fi
apt-mark unhold "$pkg" >/dev/null 2>&1 || true
apt-get install -y -q --no-install-recommends --allow-downgrades "$pkg=$v"
apt-mark hold "$pkg" >/dev/null
systemctl enable nvidia-fabricmanager
if [ -e /sys/module/nvidia ]; then systemctl restart nvidia-fabricmanager; fi
