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
# put FILE CONTENT: writes CONTENT (and a newline) to FILE, creating its
# directory, unless FILE holds it already; true when it wrote.
put() {
  if [ "$(cat "$1" 2>/dev/null)" = "$2" ]; then return 1; fi
  mkdir -p "${1%/*}"
  printf '%s\n' "$2" >"$1"
}
changed=0
# enable_components COMPONENT...: adds the components to every source of the
# distribution's release - suite bookworm (or -updates, -security)
# with component main, which the archive has and third-party repositories
# such as Docker's do not - in deb822 .sources files and one-line .list files
# alike. Prints the files it changed.
enable_components() {
  local f tmp
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    tmp=$(mktemp)
    case $f in
    *.sources)
      awk -v want="$*" -v suite=bookworm '
        function add(line,   n, w, i) {
          n = split(want, w, " ")
          for (i = 1; i <= n; i++) if (line !~ "(^|[ :])" w[i] "( |$)") line = line " " w[i]
          return line
        }
        BEGIN { s = 0 } # a number: an unset variable would be "" as an array index
        NR == FNR {
          if (/^[[:space:]]*$/) s++
          else if ($1 == "Suites:" && $0 ~ "[ :]" suite "([ -]|$)") suiteOK[s] = 1
          else if ($1 == "Components:" && $0 ~ "[ :]main( |$)") mainOK[s] = 1
          next
        }
        FNR == 1 { s = 0 }
        /^[[:space:]]*$/ { s++ }
        $1 == "Components:" && suiteOK[s] && mainOK[s] { $0 = add($0) }
        { print }' "$f" "$f" >"$tmp" ;;
    *)
      awk -v want="$*" -v suite=bookworm '
        $1 ~ /^deb(-src)?$/ {
          i = 2; if ($2 ~ /^\[/) { while (i <= NF && $i !~ /\]$/) i++; i++ }
          main = 0; for (j = i + 2; j <= NF; j++) if ($j == "main") main = 1
          if ($(i + 1) ~ "^" suite "(-|$)" && main) {
            n = split(want, w, " ")
            for (k = 1; k <= n; k++) { found = 0; for (j = i + 2; j <= NF; j++) if ($j == w[k]) found = 1; if (!found) $0 = $0 " " w[k] }
          }
        }
        { print }' "$f" >"$tmp" ;;
    esac
    if ! cmp -s "$f" "$tmp"; then
      cat "$tmp" >"$f"
      echo "gpukit: enabled components $* in $f"
    fi
    rm -f "$tmp"
  done
}
if [ -n "$(enable_components contrib non-free non-free-firmware)" ]; then changed=1; fi
if [ "$changed" = 1 ]; then apt-get update -q; fi
if [ "$changed" = 1 ]; then echo "gpukit: package sources changed"; fi
