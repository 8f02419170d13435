#!/usr/bin/env bash
# Fact gathering over N light lab hosts, four contenders in the same run on the same hosts:
#   gpukit          `gpukit preflight` (one in-process SSH connection per host, the probe in one
#                   round trip; preflight/checks skipped: light hosts have no systemd, see README)
#   ansible         `ansible all -m setup` (Debian's ansible-core; forks = N, pipelining,
#                   ControlPersist), OpenSSH's default key exchange
#   openssh         the floor: parallel OpenSSH (`xargs -P N ssh ... bash -s < probe`), the exact
#                   probe gpukit sends, OpenSSH's default key exchange
#   openssh-kex     the same floor with KexAlgorithms set to the key exchange gpukit negotiated:
#                   like with like; the ratios are against this one
# Per contender: wall time; CPU of its own cgroup (the client and everything it forks) plus CPU of
# the hosts' cgroup (every light host's sshd and what it runs) over its run; hosts that delivered
# facts, from its own output; its exit code; the key exchange it negotiated. Every repetition
# starts cold (no SSH connection or control socket survives a run).
# Usage: bench/facts.sh [N...]   (default: 10 50 100; root; cgroup v1 cpuacct or cgroup v2)
# Env: REPS (default 3), LAB_ID (default 90), OUT (default bench/results/facts-<date>.md),
#      GPUKIT (binary to measure; default: `make build`, then bin/gpukit), FLOOR_KEX (KexAlgorithms
#      of openssh-kex; default: what gpukit negotiated), TIMEOUT (seconds per contender run, 600),
#      CONTENDERS (default "gpukit ansible openssh openssh-kex"; gpukit and openssh-kex are needed).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=/usr/local/go/bin:$PATH

sizes=("$@"); [ ${#sizes[@]} -gt 0 ] || sizes=(10 50 100)
REPS=${REPS:-3}
LAB_ID=${LAB_ID:-90}
TIMEOUT=${TIMEOUT:-600}
LAB=test/lab/lab.sh
PROBE=pkg/scripts/testdata/probe/any.sh # the exact script gpukit sends (prelude included), a golden file
read -ra contenders <<<"${CONTENDERS:-gpukit ansible openssh openssh-kex}"
FLOOR=openssh-kex # the ratios' reference
declare -A title=([gpukit]=gpukit [ansible]=ansible [openssh]="openssh floor" [openssh-kex]="openssh floor, gpukit's kex")

die() { echo "facts.sh: $*" >&2; exit 1; }
has() { local c; for c in "${contenders[@]}"; do [ "$c" != "$1" ] || return 0; done; return 1; }
if ! has gpukit || ! has openssh-kex; then die "CONTENDERS must include gpukit and openssh-kex (the ratios' reference)"; fi
warn() { echo "facts.sh: warning: $*" >&2; }
[ "$(id -u)" = 0 ] || die "run as root (the lab and the cgroups need it)"
[ -r "$PROBE" ] || die "$PROBE is missing (the probe's golden file)"
mkdir -p bench/results
OUT=${OUT:-bench/results/facts-$(date -u +%Y%m%d-%H%M%S).md}
work=$(mktemp -d)

need=()
command -v ansible >/dev/null || need+=(ansible-core)
command -v jq >/dev/null || need+=(jq)
[ -x /usr/bin/time ] || need+=(time)
if [ ${#need[@]} -gt 0 ]; then
  apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${need[@]}" >/dev/null
fi
if [ -z "${GPUKIT:-}" ]; then make build >/dev/null; GPUKIT=bin/gpukit; fi
[ -x "$GPUKIT" ] || die "no gpukit binary at $GPUKIT"

# ---------------------------------------------------------------- cgroups
# One cgroup for the hosts (the lab is started from inside it: every light host's sshd, and the
# sessions it forks, stay there) and one per contender (the client and all it forks), made below
# this shell's own cgroup. Only CPU accounting: cpuacct on cgroup v1 (a memory cgroup costs
# ~190 ms to make here), cpu.stat's usage_usec on v2 (there whether or not the cpu controller
# is enabled).
# CGROUP=v1|v2 picks one on a hybrid machine (v2 then uses /sys/fs/cgroup/unified); default v1 if
# cpuacct is mounted, else v2.
CGROUP=${CGROUP:-auto}
if [ "$CGROUP" = auto ]; then
  if [ -r /sys/fs/cgroup/cpuacct/cpuacct.usage ]; then CGROUP=v1; else CGROUP=v2; fi
fi
case $CGROUP in
v1)
  [ -r /sys/fs/cgroup/cpuacct/cpuacct.usage ] || die "cgroup v1 cpuacct is not mounted at /sys/fs/cgroup/cpuacct"
  cg_mnt=/sys/fs/cgroup/cpuacct
  cg_self=$(awk -F: '$2 ~ /(^|,)cpuacct(,|$)/ {print $3}' /proc/self/cgroup) ;;
v2)
  cg_mnt=/sys/fs/cgroup
  if [ "$(stat -fc %T /sys/fs/cgroup 2>/dev/null)" != cgroup2fs ]; then cg_mnt=/sys/fs/cgroup/unified; fi
  [ -r "$cg_mnt/cgroup.procs" ] || die "cgroup v2 is mounted neither at /sys/fs/cgroup nor at /sys/fs/cgroup/unified"
  cg_self=$(awk -F: '$1 == 0 {print $3}' /proc/self/cgroup) ;;
*) die "CGROUP must be v1, v2 or auto, not '$CGROUP'" ;;
esac
cg_version=$CGROUP
cg_parent=$cg_mnt${cg_self%/}
cg=$cg_parent/gkbench-$$
mkdir "$cg" || die "cannot make cgroup $cg"
for c in hosts "${contenders[@]}"; do mkdir "$cg/$c"; done

# usage DIR: CPU time used by cgroup DIR and its descendants so far, in ns
usage() {
  if [ "$cg_version" = v1 ]; then
    echo "$(<"$1/cpuacct.usage")"
  else
    local k v
    while read -r k v; do if [ "$k" = usage_usec ]; then echo "$((v * 1000))"; return; fi; done <"$1/cpu.stat"
    echo 0
  fi
}
nprocs() { local p; mapfile -t p <"$1/cgroup.procs"; echo "${#p[@]}"; }
# in_cgroup NAME CMD...: CMD (exec'd) in bench cgroup NAME
in_cgroup() { (echo "$BASHPID" >"$cg/$1/cgroup.procs" && shift && exec "$@"); }

# A lab holds 254 light hosts; a larger size spans labs LAB_ID, LAB_ID+1, ... of LAB_PER hosts
# each, merged into one inventory (one known_hosts file; host names and hostnames prefixed with
# the lab, so that they stay unique, as preflight/cluster checks they are).
LAB_PER=250
lab_ids=()
release_labs() {
  local id
  for id in "${lab_ids[@]}" "$LAB_ID"; do "$LAB" --lab "$id" release >/dev/null 2>&1 || true; done
  lab_ids=()
}
# labs_up N: N light hosts in as many labs as they need; prints the inventory's path
labs_up() {
  local n=$1 k j id cnt one
  if ((n <= 254)); then
    lab_ids=("$LAB_ID")
    in_cgroup hosts "$LAB" --lab "$LAB_ID" up --light "$n" | tail -n 1
    return
  fi
  k=$(((n + LAB_PER - 1) / LAB_PER))
  : >"$work/fleet.known_hosts"
  for ((j = 0; j < k; j++)); do
    id=$((LAB_ID + j)) cnt=$LAB_PER
    if ((j == k - 1)); then cnt=$((n - LAB_PER * (k - 1))); fi
    lab_ids+=("$id")
    "$LAB" --lab "$id" release >/dev/null 2>&1 || true
    one=$(LAB_HOSTNAME_PREFIX="l$id-" in_cgroup hosts "$LAB" --lab "$id" up --light "$cnt" | tail -n 1)
    cat "$(sed -n 's/^ *knownHostsFile: *//p' "$one" | head -n1)" >>"$work/fleet.known_hosts"
    if ((j == 0)); then # the header (ssh, mirrors) from the first lab, up to its hosts
      # and a pod network with a /24 for each of N nodes (the default /16 holds 256)
      sed -n '1,/^  hosts:/p' "$one" | sed "s|^\( *knownHostsFile:\).*|\1 $work/fleet.known_hosts|" |
        sed 's|^  hosts:|  network:\n    podCIDR: 10.64.0.0/14\n  hosts:|' >"$work/fleet.yaml"
    fi
    sed -n '/^  hosts:/,$p' "$one" | sed '1d' | sed "s/^\(    - name: \)/\1l$id-/" |
      if ((j > 0)); then sed 's/roles: \[control-plane\]/roles: [worker]/'; else cat; fi >>"$work/fleet.yaml"
  done
  echo "$work/fleet.yaml"
}

cleanup() {
  local c p _
  release_labs
  # whatever a contender left (an interrupted run) is ours: end it; what stays in the hosts' cgroup
  # after the release (the lab's repository server, if another lab still uses it) goes back up
  for c in "${contenders[@]}"; do
    while read -r p; do kill -KILL "$p" 2>/dev/null || true; done <"$cg/$c/cgroup.procs"
  done
  for _ in 1 2 3 4 5 6 7 8 9 10; do
    for c in "$cg"/*/; do
      while read -r p; do echo "$p" >"$cg_parent/cgroup.procs" 2>/dev/null || true; done <"$c/cgroup.procs"
      rmdir "$c" 2>/dev/null || true
    done
    rmdir "$cg" 2>/dev/null && break
    sleep 0.2
  done
  [ ! -d "$cg" ] || warn "could not remove cgroup $cg"
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---------------------------------------------------------------- measuring
# busy jiffies of the whole machine (user nice system irq softirq steal; USER_HZ = 100): only a
# cross-check of the cgroups (it also counts whatever else runs on the machine)
busy() { local _c u n s _i _w irq sirq st _r; read -r _c u n s _i _w irq sirq st _r </proc/stat; echo $((u + n + s + irq + sirq + st)); }

# quiesce [NAME]: waits (10 s at most) until contender NAME's cgroup is empty and the hosts'
# cgroup is back to its idle process count (every session closed on the hosts' side)
quiesce() {
  local end=$((SECONDS + 10))
  while { [ -n "${1:-}" ] && (($(nprocs "$cg/$1") > 0)); } || (($(nprocs "$cg/hosts") > hosts_idle)); do
    ((SECONDS < end)) || { warn "${1:-warm-up}: processes left (hosts' cgroup: $(nprocs "$cg/hosts"), idle: $hosts_idle)"; return; }
    sleep 0.02
  done
}

# run NAME CMD...: one run of contender NAME in its cgroup. Wall time: until CMD exits. CPU: its
# cgroup and the hosts' cgroup from the start until CMD and everything it left behind are gone
# and the hosts are idle again (after: `after_NAME`, if defined). Appends
# "wall client_cpu hosts_cpu machine_cpu rc" (seconds; exit code) to $res/NAME.
run() {
  local name=$1; shift
  local c0 h0 m0 t0 t1 c1 h1 m1 rc=0
  quiesce "$name"
  c0=$(usage "$cg/$name"); h0=$(usage "$cg/hosts"); m0=$(busy); t0=$EPOCHREALTIME
  in_cgroup "$name" timeout -k 5 "$TIMEOUT" "$@" >"$work/$name.out" 2>"$work/$name.err" || rc=$?
  t1=$EPOCHREALTIME
  if declare -F "after_$name" >/dev/null; then "after_$name"; fi
  quiesce "$name"
  c1=$(usage "$cg/$name"); h1=$(usage "$cg/hosts"); m1=$(busy)
  awk -v t0="$t0" -v t1="$t1" -v c="$((c1 - c0))" -v h="$((h1 - h0))" -v m="$((m1 - m0))" -v rc="$rc" \
    'BEGIN {printf "%.3f %.3f %.3f %.2f %d\n", t1 - t0, c / 1e9, h / 1e9, m / 100, rc}' >>"$res/$name"
}

# ---------------------------------------------------------------- the contenders
# ssh options common to every OpenSSH client here (ansible's, the floors', the kex checks)
ssh_opts() { printf '%s\n' -i "$key" -o "UserKnownHostsFile=$kh" -o StrictHostKeyChecking=yes -o BatchMode=yes; }

# one host of the OpenSSH floor: floor.sh OUTDIR KEX|default ADDR; output to OUTDIR/ADDR
cat >"$work/floor.sh" <<'EOF'
#!/bin/sh
out=$1 kex=$2 addr=$3
set --
if [ "$kex" != default ]; then set -- -o "KexAlgorithms=$kex"; fi
# not exec: ssh exits 255 when it cannot connect, which would make xargs stop starting hosts
ssh -i "$BENCH_KEY" -o "UserKnownHostsFile=$BENCH_KH" -o StrictHostKeyChecking=yes -o BatchMode=yes \
  -o ConnectTimeout=30 -o LogLevel=ERROR "$@" "root@$addr" bash -s <"$BENCH_PROBE" >"$out/$addr" || exit 1
EOF
chmod +x "$work/floor.sh"
export BENCH_PROBE=$PWD/$PROBE

# ansible_argv ARG...: sets argv to `ansible all ARG...` on the lab hosts, control sockets in $cp_dir
ansible_argv() {
  argv=(env ANSIBLE_HOST_KEY_CHECKING=True ANSIBLE_PIPELINING=True ANSIBLE_GATHERING=explicit
    ANSIBLE_SSH_ARGS="-o ControlMaster=auto -o ControlPersist=60s -o UserKnownHostsFile=$kh -o StrictHostKeyChecking=yes"
    ANSIBLE_SSH_CONTROL_PATH_DIR="$cp_dir" ANSIBLE_PYTHON_INTERPRETER=/usr/bin/python3 ANSIBLE_LOCALHOST_WARNING=False
    ansible all -i "$work/hosts.ini" --private-key "$key" "$@")
}
after_ansible() { # ControlPersist masters: close them (a real run leaves them 60 s, then they go)
  local sock
  for sock in "$cp_dir"/*; do [ -S "$sock" ] && { ssh -o ControlPath="$sock" -O exit x >/dev/null 2>&1 || true; }; done # a master already gone: 255
  return 0
}

# hosts that delivered facts, each contender from its own output
ok_gpukit() { # the report (last line): hosts whose facts are not null
  jq -R 'fromjson? | select(.type == "preflight-report") | [.hosts[] | select(.facts != null)] | length' \
    "$work/gpukit.out" | tail -n 1 | grep . || echo 0
}
ok_ansible() { # "HOST | SUCCESS => {" blocks that hold ansible_facts
  awk '/^[^ ]+ \| [A-Z]+!? => \{$/ {host = $1; st = $3; next}
       st == "SUCCESS" && /"ansible_facts": \{/ && !(host in ok) {ok[host] = 1; n++}
       END {print n + 0}' "$work/ansible.out"
}
ok_floor() { { grep -l '^os\.id=' "$1"/* 2>/dev/null || true; } | wc -l; } # ok_floor OUTDIR: host outputs with facts

# kex_ssh [SSH OPTION...]: "kex host-key cipher" an OpenSSH client with these options negotiates
# with the first host (`ssh -v`, outside the measurement)
kex_ssh() {
  local o
  mapfile -t o < <(ssh_opts)
  { LC_ALL=C ssh -v "${o[@]}" -o ControlMaster=no "$@" "root@$(head -n 1 "$work/addrs")" true 2>&1 || true; } | kex_fields
}
# kex_ansible: the same for Ansible's own ssh (`ansible -vvvv` makes it `ssh -vvv`), first host
kex_ansible() {
  cp_dir=$(mktemp -d "$work/cp.XXXX")
  ansible_argv -m ping --limit "$(head -n 1 "$work/addrs")" -vvvv
  { "${argv[@]}" 2>&1 || true; } | { grep -o 'kex: [a-z >-]*: [^ \\]*' || true; } | kex_fields
  after_ansible
}
# kex_fields: "kex host-key cipher" from OpenSSH's "kex: ...:" debug lines
kex_fields() {
  awk '{sub(/\r$/, "")} # ssh -v ends its lines with \r\n
    /kex: algorithm:/ && !k {k = $NF} /kex: host key algorithm:/ && !h {h = $NF}
    /kex: server->client cipher:/ && !c {for (i = 1; i <= NF; i++) if ($i == "cipher:") c = $(i + 1)}
    END {printf "%s %s %s\n", (k ? k : "?"), (h ? h : "?"), (c ? c : "?")}'
}
# kex_gpukit LOGDIR: "kex host-key cipher" of every host gpukit connected to, one line each, from
# the "connected:" line of its host logs
kex_gpukit() {
  { cat /dev/null "$1"/*/*.log 2>/dev/null || true; } | awk '/ connected: / {k = "?"; h = "?"; c = "?"
    for (i = 1; i < NF; i++) { if ($i == "kex") k = $(i + 1); if ($i == "hostkey") h = $(i + 1); if ($i == "cipher") c = $(i + 1) }
    print k, h, c}'
}

# ---------------------------------------------------------------- the breakdown
# timeline OUT: from gpukit's events, "connect-phase-s facts-phase-s connect-med connect-max
# facts-med facts-max" (per-host durations of each phase, s; facts = waiting for a session + probe)
timeline() {
  jq -rs '[.[] | select(.type == "host_done")] as $h
    | def p($n): [.[] | select(.type == "phase_done" and .phase == $n) | .durationMs / 1000] | first // 0;
      def q($n; $f): ([$h[] | select(.phase == $n) | .durationMs / 1000] | sort) as $a
        | if ($a | length) == 0 then 0 else $a[(($a | length) - 1) * $f | floor] end;
    [p("connect"), p("preflight/facts"), q("connect"; 0.5), q("connect"; 1), q("preflight/facts"; 0.5), q("preflight/facts"; 1)]
    | map(. * 100 | round / 100) | join(" ")' "$1"
}
# cpu_parts PROFILE: gpukit's CPU by part, in % of its profile's samples: "ssh-protocol-and-crypto
# events-and-logs gc other" (cumulative, so a frame in two parts counts in the first)
cpu_parts() {
  go tool pprof -traces "$GPUKIT" "$1" 2>/dev/null | awk '
    /^-----------/ { flush(); next }
    /^ *[0-9.]+m?s / && !in_st { w = $1; sub(/ms$/, "", w); if (w ~ /s$/) { sub(/s$/, "", w); w *= 1000 } in_st = 1; st = $0; next }
    in_st { st = st "\n" $0 }
    function flush() { if (!in_st) return; all += w
      if (st ~ /golang.org\/x\/crypto\/ssh|crypto\//) s += w; else if (st ~ /engine\.\(\*Host\)\.emit|engine\.\(\*runState\)\.emit|engine\.\(\*logFile\)|ui\.\(\*JSON\)/) e += w
      else if (st ~ /runtime\.gcBgMarkWorker|runtime\.gcDrain|runtime\.mallocgc/) g += w; else o += w
      in_st = 0 }
    END { flush(); if (all == 0) { print "0 0 0 0"; exit } printf "%.0f %.0f %.0f %.0f\n", 100 * s / all, 100 * e / all, 100 * g / all, 100 * o / all }'
}
# session_costs ADDR KEX: the hosts' CPU (ms) of one session, serially, 20 times each: sshd and the
# login alone (`true`), `bash -s` with an empty script, gpukit's runner (its one-line golden file)
# with an empty script, the probe through `bash -s` and through the runner. Prints "true bash
# runner probe-bash probe-runner".
session_costs() {
  local addr=$1 kex=$2 o k=20 m=gpukit-00000000000000000000000000000000 v h0 h1 out=()
  mapfile -t o < <(ssh_opts)
  o+=(-o "KexAlgorithms=$kex" -o LogLevel=ERROR)
  local runner_line
  runner_line="bash -c $(sed 's/'"'"'/'"'\\''"'/g; s/^/'"'"'/; s/$/'"'"'/' pkg/ssh/testdata/scripts/runner.sh) gpukit $m"
  : >"$work/empty.sh"
  layout() { printf '%s\n0\n%s\n' "$m" "$(wc -c <"$1")"; cat "$1"; printf '%s\n' "$m"; }
  layout "$work/empty.sh" >"$work/empty.in"; layout "$PROBE" >"$work/probe.in"
  for v in true bash runner probe-bash probe-runner; do
    quiesce
    h0=$(usage "$cg/hosts")
    for _ in $(seq "$k"); do
      # shellcheck disable=SC2029 # the runner's command line is made here, on purpose
      case $v in
      true) ssh "${o[@]}" "root@$addr" true ;;
      bash) ssh "${o[@]}" "root@$addr" bash -s <"$work/empty.sh" ;;
      probe-bash) ssh "${o[@]}" "root@$addr" bash -s <"$PROBE" ;;
      # stdin stays open until the runner exits, as gpukit keeps it (its end is the watchdog's signal)
      runner) ssh "${o[@]}" "root@$addr" "$runner_line" < <(cat "$work/empty.in"; exec sleep 30) ;;
      probe-runner) ssh "${o[@]}" "root@$addr" "$runner_line" < <(cat "$work/probe.in"; exec sleep 30) ;;
      esac >/dev/null 2>&1 || warn "session_costs $v: exit $?"
    done
    quiesce
    h1=$(usage "$cg/hosts")
    out+=("$(awk -v d="$((h1 - h0))" -v k="$k" 'BEGIN {printf "%.1f", d / 1e6 / k}')")
  done
  pkill -f '^sleep 30$' 2>/dev/null || true
  echo "${out[*]}"
}

# ---------------------------------------------------------------- the run
median() { sort -n | awk '{a[NR] = $1} END {if (NR) print a[int((NR + 1) / 2)]; else print 0}'; }
col() { awk -v c="$2" '{print $c}' "$1" | median; } # col FILE N: median of column N

table=$work/table
printf '| hosts | contender | kex | hosts ok | exit | wall s | CPU s (client + hosts) | client CPU ms/host | hosts CPU s | machine CPU s | wall vs floor | CPU vs floor | gpukit peak RSS |\n' >"$table"
printf '|---|---|---|---|---|---|---|---|---|---|---|---|---|\n' >>"$table"
load=$(cut -d' ' -f1-3 /proc/loadavg)

for n in "${sizes[@]}"; do
  echo "== $n light hosts" >&2
  res=$work/res.$n && mkdir -p "$res"
  release_labs
  inv=$(labs_up "$n")
  hosts_idle=$(nprocs "$cg/hosts") # each light host: its unshare and sshd (and the lab's repository, if started now)
  key=$(sed -n 's/^ *keyFile: *//p' "$inv" | head -n1)
  kh=$(sed -n 's/^ *knownHostsFile: *//p' "$inv" | head -n1)
  export BENCH_KEY=$key BENCH_KH=$kh
  # every contender logs in as root: no sudo in any path
  sed 's/^\(  *user:\) .*/\1 root/' "$inv" >"$work/inv.yaml"
  sed -n 's/^ *address: *//p' "$work/inv.yaml" >"$work/addrs"
  [ "$(wc -l <"$work/addrs")" = "$n" ] || die "expected $n addresses in $inv"
  printf '[lab]\n' >"$work/hosts.ini"; sed 's/$/ ansible_user=root/' "$work/addrs" >>"$work/hosts.ini"
  floor_kex=${FLOOR_KEX:-}
  # warm-up, not measured: one floor run, so that no contender pays the hosts' first connection
  # (ARP, each host's first sshd exec and overlay lookups); gpukit, measured first, would
  mkdir -p "$work/warmup"
  xargs -P "$n" -n 1 "$work/floor.sh" "$work/warmup" default <"$work/addrs" || warn "warm-up: $(ok_floor "$work/warmup") of $n hosts answered"
  quiesce
  for r in $(seq "$REPS"); do
    echo "   rep $r: gpukit" >&2
    logs=$work/logs.$n.$r
    run gpukit env GPUKIT_CPUPROFILE="$work/cpu.$n.$r.prof" /usr/bin/time -o "$work/time" -f '%U %S %M' \
      "$GPUKIT" preflight -i "$work/inv.yaml" -o json --concurrency "$n" --log-dir "$logs" --skip-phases preflight/checks
    # GNU time puts "Command exited with non-zero status" first when preflight fails hosts
    tail -n 1 "$work/time" >>"$res/gpukit.time"
    ok_gpukit >>"$res/gpukit.ok"
    timeline "$work/gpukit.out" >>"$res/gpukit.timeline"
    cpu_parts "$work/cpu.$n.$r.prof" >>"$res/gpukit.cpu"
    kex_gpukit "$logs" >>"$res/gpukit.kex"
    if [ -z "$floor_kex" ]; then # the key exchange most of gpukit's connections used
      floor_kex=$(cut -d' ' -f1 "$res/gpukit.kex" | sort | uniq -c | sort -rn | awk 'NR == 1 {print $2}')
      if [ -z "$floor_kex" ] || [ "$floor_kex" = "?" ]; then
        warn "no key exchange in gpukit's host logs (a binary without the \"connected:\" line?): the floor uses curve25519-sha256"
        floor_kex=curve25519-sha256
      fi
    fi

    if has ansible; then
      echo "   rep $r: ansible" >&2
      cp_dir=$(mktemp -d "$work/cp.XXXX") # a fresh control-socket directory: every run starts cold
      ansible_argv -m setup -f "$n"
      run ansible "${argv[@]}"
      ok_ansible >>"$res/ansible.ok"
    fi

    for floor in openssh openssh-kex; do
      has "$floor" || continue
      echo "   rep $r: $floor" >&2
      kex=default
      if [ "$floor" = openssh-kex ]; then kex=$floor_kex; fi
      rm -rf "$work/floor.out" && mkdir "$work/floor.out"
      run "$floor" xargs -P "$n" -n 1 "$work/floor.sh" "$work/floor.out" "$kex" <"$work/addrs"
      ok_floor "$work/floor.out" >>"$res/$floor.ok"
    done

    for c in "${contenders[@]}"; do # a host that failed is in the table; say why here
      ok=$(tail -n 1 "$res/$c.ok") rc=$(tail -n 1 "$res/$c" | cut -d' ' -f5)
      if [ "$ok" != "$n" ] || [ "$rc" != 0 ]; then
        warn "$c: $ok of $n hosts delivered facts, exit code $rc; last output:"
        tail -n 5 "$work/$c.err" "$work/$c.out" | cut -c1-300 >&2
        if [ "$c" = gpukit ]; then # its events name each failed host and why: the errors, counted
          jq -r 'select(.type == "host_failed") | "\(.phase): \(.err)"' "$work/$c.out" 2>/dev/null |
            sed -E 's/[0-9]+(\.[0-9]+){3}(:[0-9]+)?/ADDR/g' | sort | uniq -c | sort -rn | head -n 5 | cut -c1-300 >&2 || true
        fi
      fi
    done
  done

  echo "   per session, serially on one host" >&2
  session_costs "$(head -n 1 "$work/addrs")" "$floor_kex" >"$res/sessions"
  read -r c_con c_fact t_cm t_cx t_fm t_fx < <(for i in 1 2 3 4 5 6; do awk -v i="$i" '{print $i}' "$res/gpukit.timeline" | median; done | paste -sd' ')
  read -r p_ssh p_ev p_gc p_other < <(for i in 1 2 3 4; do awk -v i="$i" '{print $i}' "$res/gpukit.cpu" | median; done | paste -sd' ')
  read -r s_true s_bash s_runner s_pb s_pr <"$res/sessions"
  gw=$(col "$res/gpukit" 1); gcl=$(awk -v n="$n" '{print $2 * 1000 / n}' "$res/gpukit" | median)
  printf '| %s | %s | %s / %s | %s / %s | %s | %s / %s / %s / %s | %s | %s | %s | %s | %s |\n' "$n" "$gw" "$c_con" "$c_fact" "$t_cm" "$t_cx" "$t_fm / $t_fx" \
    "$(awk -v c="$gcl" -v p="$p_ssh" 'BEGIN {printf "%.1f", c * p / 100}')" "$(awk -v c="$gcl" -v p="$p_ev" 'BEGIN {printf "%.1f", c * p / 100}')" \
    "$(awk -v c="$gcl" -v p="$p_gc" 'BEGIN {printf "%.1f", c * p / 100}')" "$(awk -v c="$gcl" -v p="$p_other" 'BEGIN {printf "%.1f", c * p / 100}')" \
    "$s_true" "$(awk -v a="$s_bash" -v b="$s_true" 'BEGIN {printf "%.1f", a - b}')" "$(awk -v a="$s_runner" -v b="$s_bash" 'BEGIN {printf "%+.1f", a - b}')" \
    "$(awk -v a="$s_pb" -v b="$s_bash" 'BEGIN {printf "%.1f", a - b}')" "$(awk -v a="$s_pr" -v b="$s_pb" 'BEGIN {printf "%+.1f", a - b}')" >>"$work/breakdown"

  # what each contender negotiated (gpukit: every host of every repetition; OpenSSH: `ssh -v`)
  declare -A nego=()
  nego[gpukit]=$(sort -u "$res/gpukit.kex")
  if [ -z "${nego[gpukit]}" ]; then nego[gpukit]="? ? ?"; fi
  if [ "$(wc -l <<<"${nego[gpukit]}")" -gt 1 ]; then
    warn "gpukit negotiated different algorithms with different hosts (host count, kex, host key, cipher):"
    sort "$res/gpukit.kex" | uniq -c >&2
    nego[gpukit]="mixed mixed mixed"
  fi
  if has ansible; then nego[ansible]=$(kex_ansible); fi
  nego[openssh]=$(kex_ssh)
  nego[openssh-kex]=$(kex_ssh -o "KexAlgorithms=$floor_kex")
  fw=$(col "$res/$FLOOR" 1)
  fc=$(awk '{print $2 + $3}' "$res/$FLOOR" | median)
  for c in "${contenders[@]}"; do
    w=$(col "$res/$c" 1)
    t=$(awk '{print $2 + $3}' "$res/$c" | median)
    cl=$(awk -v n="$n" '{print $2 * 1000 / n}' "$res/$c" | median)
    h=$(col "$res/$c" 3); m=$(col "$res/$c" 4)
    ok=$(sort -n "$res/$c.ok" | head -n 1)
    rcs=$(cut -d' ' -f5 "$res/$c" | sort -un | paste -sd',')
    rss="-"
    if [ "$c" = gpukit ]; then
      kib=$(awk '{print $3}' "$res/gpukit.time" | median)
      rss="$((kib / 1024)) MiB"
    fi
    awk -v n="$n" -v c="${title[$c]}" -v k="${nego[$c]%% *}" -v ok="$ok" -v rcs="$rcs" -v w="$w" -v t="$t" \
      -v cl="$cl" -v h="$h" -v m="$m" -v fw="$fw" -v fc="$fc" -v rss="$rss" 'BEGIN {
        printf "| %d | %s | %s | %s/%d | %s | %.2f | %.2f | %.1f | %.2f | %.2f | %.2fx | %.2fx | %s |\n",
          n, c, k, ok, n, rcs, w, t, cl, h, m, w / fw, t / fc, rss}' >>"$table"
  done
  # runs during which the machine did other work too: machine CPU more than 15 % (+0.2 s) above
  # the contender's and the hosts' cgroups
  for c in "${contenders[@]}"; do
    awk -v n="$n" -v c="${title[$c]}" '$4 > 1.15 * ($2 + $3) + 0.2 {b++; x = x sprintf(" %.1f/%.1f", $4, $2 + $3)}
      END {if (b) printf "- %d hosts, %s: %d of %d runs shared the machine with other work (machine/cgroup CPU s:%s): wall times not comparable\n", n, c, b, NR, x}' \
      "$res/$c" >>"$work/busy"
  done
  release_labs
done

{
  echo "# Fact gathering: gpukit vs Ansible vs parallel OpenSSH"
  echo
  echo "$(date -u +%Y-%m-%d), $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo)," \
    "$(uname -r), cgroup $cg_version, median of $REPS, load average before the run: $load;" \
    "floor = ${title[$FLOOR]} (KexAlgorithms=$floor_kex)"
  echo
  cat "$table"
  echo
  if [ -s "$work/busy" ]; then echo "Other work on the machine during the run:"; echo; cat "$work/busy"; echo; fi
  echo "Where gpukit's time goes (medians over the repetitions; phases and per-host times from its events, client CPU split by its CPU profile, hosts' CPU per session measured serially on one host, 20 sessions each):"
  echo
  echo "| hosts | gpukit wall s | phases s: connect / facts | per host connect s: median / max | per host facts s: median / max | client CPU ms/host: SSH and crypto / events and logs / GC / other | hosts' CPU ms per session: sshd and login | + bash -s | runner vs bash -s | probe | probe through the runner vs bash -s |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|"
  cat "$work/breakdown"
  echo
  echo "| contender | key exchange | host key | cipher |"
  echo "|---|---|---|---|"
  for c in "${contenders[@]}"; do
    read -r k h ci <<<"${nego[$c]}"
    echo "| ${title[$c]} | $k | $h | $ci |"
  done
} | tee "$OUT"
echo "results: $OUT" >&2
