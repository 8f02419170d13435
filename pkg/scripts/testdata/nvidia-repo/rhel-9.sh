set -euo pipefail
export LC_ALL=C DEBIAN_FRONTEND=noninteractive
# Makes the NVIDIA driver's packages available: NVIDIA's CUDA repository
# (or the site's mirror of it), or the distribution's own components that
# carry them. Idempotent: a repository already set up as wanted is left as
# it is, and the package index is refreshed only after a change.
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
# put FILE CONTENT: writes CONTENT (and a newline) to FILE, creating its
# directory, unless FILE holds it already; true when it wrote.
put() {
  if [ "$(cat "$1" 2>/dev/null)" = "$2" ]; then return 1; fi
  mkdir -p "${1%/*}"
  printf '%s\n' "$2" >"$1"
}
changed=0
base=https://developer.download.nvidia.com/compute/cuda/repos/rhel9/x86_64/
repo=/etc/yum.repos.d/cuda-rhel9.repo
want="[cuda-rhel9-x86_64]
name=cuda-rhel9-x86_64
baseurl=$base
enabled=1
gpgcheck=1
gpgkey=${base}D42D0685.pub"
if put "$repo" "$want"; then changed=1; fi
# DKMS and the driver's build dependencies: CRB (9) or PowerTools (8), and EPEL.
dnf config-manager --set-enabled crb 2>/dev/null || true
if [ "$changed" = 1 ]; then dnf -q makecache; fi
if [ "$changed" = 1 ]; then echo "gpukit: package sources changed"; fi
