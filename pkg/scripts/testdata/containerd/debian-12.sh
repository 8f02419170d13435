set -euo pipefail
export LC_ALL=C DEBIAN_FRONTEND=noninteractive
# Installs containerd from Docker's repository (containerd.io 2.3.1),
# holds it against upgrades and links the distribution's CNI plugins into
# /opt/cni/bin (where CNIs look for them; a plugin already there stays).
# gpukit configures containerd next (containerd-config.sh).
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
# fetch URL FILE: downloads with whatever the host has (curl, wget, python3),
# through the site's proxy where gpukit set one (spec.proxy).
fetch() (
  # shellcheck disable=SC1091
  if [ -r /etc/gpukit/proxy.env ]; then . /etc/gpukit/proxy.env; fi
  if command -v curl >/dev/null 2>&1; then
    curl -fsSL --retry 3 -o "$2" "$1"
  elif command -v wget >/dev/null 2>&1; then
    wget -q -O "$2" "$1"
  elif command -v python3 >/dev/null 2>&1; then
    python3 -c 'import sys, urllib.request; urllib.request.urlretrieve(sys.argv[1], sys.argv[2])' "$1" "$2"
  else
    echo "gpukit: cannot download $1: no curl, wget or python3 on this host" >&2
    return 1
  fi
)
# A repository's signing key comes from its base URL - often the site's
# mirror, the very server it is to check - so it is trusted only when every
# primary key in it has a fingerprint gpukit pins (its bill of materials, or
# the inventory's for a mirror re-signed by the site). The fingerprints are
# computed here from the key's packets (RFC 4880, RFC 9580) with coreutils,
# as a host may have no gpg; apt reads the very bytes that were checked.

# key_bytes FILE OFFSET COUNT: those bytes, as unsigned decimals.
key_bytes() { od -An -v -tu1 -j "$2" -N "$3" -- "$1"; }

# key_binary IN OUT: the OpenPGP data in IN - binary, or one ASCII-armored
# public key block - as binary in OUT.
key_binary() {
  local first
  first=$(key_bytes "$1" 0 1) || return 1
  first=${first// /}
  if [ -n "$first" ] && [ "$first" -ge 128 ]; then
    cp -- "$1" "$2"
    return
  fi
  [ "$(grep -c -- '^-----BEGIN PGP PUBLIC KEY BLOCK-----' "$1")" = 1 ] || return 1
  awk '
    /^-----BEGIN PGP PUBLIC KEY BLOCK-----/ { s = 1; next }
    s == 1 && /^[ \t\r]*$/ { s = 2; next }
    s == 1 && /^[A-Za-z]+: / { next }
    s == 1 { s = 2 }
    s == 2 && /^-----END PGP PUBLIC KEY BLOCK-----/ { s = 3; exit }
    s == 2 && /^=/ { next }
    s == 2 { print }
    END { exit s == 3 ? 0 : 1 }' "$1" | tr -d ' \t\r' | base64 -d >"$2" 2>/dev/null
}

# key_fingerprints FILE: the fingerprint of each primary key in the binary
# OpenPGP data FILE, one per line. Fails on anything but a public key's
# packets (a secret key, a truncated or partial packet, trailing bytes).
key_fingerprints() {
  local f=$1 size off=0 b tag len hl body v hdr n=0
  local -a h
  size=$(stat -c %s -- "$f") || return 1
  while [ "$off" -lt "$size" ]; do
    read -r -a h <<<"$(key_bytes "$f" "$off" 6)"
    b=${h[0]:-0}
    if [ $((b & 0x80)) = 0 ]; then return 1; fi
    if [ $((b & 0x40)) != 0 ]; then
      tag=$((b & 0x3f))
      if [ "${h[1]:-0}" -lt 192 ]; then len=${h[1]:-0} hl=2
      elif [ "${h[1]}" -lt 224 ]; then len=$(((h[1] - 192) * 256 + ${h[2]:-0} + 192)) hl=3
      elif [ "${h[1]}" = 255 ]; then len=$(((${h[2]:-0} << 24) | (${h[3]:-0} << 16) | (${h[4]:-0} << 8) | ${h[5]:-0})) hl=6
      else return 1 # a partial length: never in a key
      fi
    else
      tag=$(((b >> 2) & 15))
      case $((b & 3)) in
        0) len=${h[1]:-0} hl=2 ;;
        1) len=$(((${h[1]:-0} << 8) | ${h[2]:-0})) hl=3 ;;
        2) len=$(((${h[1]:-0} << 24) | (${h[2]:-0} << 16) | (${h[3]:-0} << 8) | ${h[4]:-0})) hl=5 ;;
        *) return 1 ;;
      esac
    fi
    body=$((off + hl))
    if [ "$len" -le 0 ] || [ $((body + len)) -gt "$size" ]; then return 1; fi
    case $tag in
      6)
        v=$(key_bytes "$f" "$body" 1)
        case ${v// /} in
          4) printf -v hdr '\\x99\\x%02x\\x%02x' $((len >> 8)) $((len & 255)) ;;
          5) printf -v hdr '\\x9a\\x%02x\\x%02x\\x%02x\\x%02x' $((len >> 24)) $(((len >> 16) & 255)) $(((len >> 8) & 255)) $((len & 255)) ;;
          6) printf -v hdr '\\x9b\\x%02x\\x%02x\\x%02x\\x%02x' $((len >> 24)) $(((len >> 16) & 255)) $(((len >> 8) & 255)) $((len & 255)) ;;
          *) return 1 ;;
        esac
        { printf '%b' "$hdr"; tail -c +$((body + 1)) -- "$f" | head -c "$len"; } |
          if [ "${v// /}" = 4 ]; then sha1sum; else sha256sum; fi | cut -d' ' -f1 | tr a-f A-F
        n=$((n + 1))
        ;;
      2 | 12 | 13 | 14 | 17) ;; # signatures, trust, user IDs, subkeys, user attributes
      *) return 1 ;;
    esac
    off=$((body + len))
  done
  [ "$n" -gt 0 ]
}

# key_unpinned FILE FPR...: prints the fingerprint of each primary key in
# the binary OpenPGP data FILE that is not among FPR; fails when FILE is
# not an OpenPGP public key.
key_unpinned() {
  local f=$1 fprs p
  shift
  fprs=$(key_fingerprints "$f") || return 1
  for p in $fprs; do
    case " $* " in *" $p "*) ;; *) echo "$p" ;; esac
  done
}

# pinned_key URL KEYRING FORMAT FPR...: makes KEYRING hold the key at URL,
# binary (FORMAT gpg: apt's signed-by) or as fetched (asc: an armored key,
# for apt and rpm), once every primary key in it is among FPR. A KEYRING
# already there is checked the same way and kept, or fetched again. True
# when KEYRING changed; the script stops at a key that is not pinned.
pinned_key() {
  local url=$1 keyring=$2 format=$3 dir bad
  shift 3
  dir=$(mktemp -d)
  if [ -s "$keyring" ] && key_binary "$keyring" "$dir/cur" &&
    { [ "$format" = asc ] || cmp -s -- "$keyring" "$dir/cur"; } &&
    bad=$(key_unpinned "$dir/cur" "$@") && [ -z "$bad" ]; then
    rm -rf -- "$dir"
    return 1
  fi
  if [ -e "$keyring" ]; then
    echo "gpukit: $keyring does not hold only a pinned key ($*): fetching it again"
  fi
  if ! fetch "$url" "$dir/key"; then
    rm -rf -- "$dir"
    echo "gpukit: cannot download the signing key $url" >&2
    exit 1
  fi
  if ! key_binary "$dir/key" "$dir/key.gpg" || ! bad=$(key_unpinned "$dir/key.gpg" "$@"); then
    rm -rf -- "$dir"
    echo "gpukit: refusing $url: not an OpenPGP public key" >&2
    exit 1
  fi
  if [ -n "$bad" ]; then
    rm -rf -- "$dir"
    echo "gpukit: refusing the signing key $url: key ${bad//$'\n'/ } is not pinned (pinned: $*);" \
      "a mirror re-signed with the site's own key names that key in spec.mirrors.signingKeys" >&2
    exit 1
  fi
  mkdir -p -- "${keyring%/*}"
  if [ "$format" = gpg ]; then
    install -m 0644 -- "$dir/key.gpg" "$keyring"
  else
    install -m 0644 -- "$dir/key" "$keyring"
  fi
  rm -rf -- "$dir"
  echo "gpukit: installed the signing key $url ($*) as $keyring"
}
base=https://download.docker.com/linux/debian/
changed=0
# Armored, where Docker's instructions put it: a source they left names
# the same keyring, and apt refuses two keyrings for one server.
keyring=/etc/apt/keyrings/docker.asc
if pinned_key "${base}"gpg "$keyring" asc 9DC858229FC7DD38854AE2D88D81803C0EBFCD88; then changed=1; fi
if put /etc/apt/sources.list.d/docker.list "deb [signed-by=$keyring] $base bookworm stable"; then changed=1; fi
if [ "$changed" = 1 ]; then apt-get update -q; fi
pinned=(containerd.io)
extra=(containernetworking-plugins)
want=2.3.1
# A host whose package index never listed them (a fresh install, no earlier
# apt-get update) gets the index refreshed once.
for p in "${pinned[@]}" "${extra[@]}"; do
  if [ -z "$(apt-cache policy "$p" 2>/dev/null | awk '/Candidate:/ && $2 != "(none)" { print $2 }')" ]; then
    apt-get update -q
    break
  fi
done
args=()
for p in "${pinned[@]}"; do
  if [ -z "$want" ]; then
    args+=("$p")
    continue
  fi
  v=$(newest "$p" "$want")
  if [ -z "$v" ]; then
    echo "gpukit: no $p $want in the host's package sources" >&2
    exit 1
  fi
  args+=("$p=$v")
done
apt-mark unhold "${pinned[@]}" "${extra[@]}" >/dev/null 2>&1 || true
# Recommends are left out: Debian's docker.io recommends needrestart, which
# restarts services on its own.
apt-get install -y -q --no-install-recommends --allow-downgrades \
  "${args[@]}" "${extra[@]}"
apt-mark hold "${pinned[@]}" "${extra[@]}" >/dev/null
mkdir -p /opt/cni/bin
for p in /usr/lib/cni/*; do
  if [ -f "$p" ] && [ ! -e "/opt/cni/bin/${p##*/}" ]; then ln -s "$p" "/opt/cni/bin/${p##*/}"; fi
done
