#!/usr/bin/env bash
# Fact gathering over N light lab hosts, three tools in the same run on the same hosts:
#   gpukit    `gpukit preflight` (one in-process SSH handshake per host, one round trip for the probe)
#   ansible   `ansible all -m setup` (Debian's ansible-core; forks = N, pipelining, ControlPersist)
#   openssh   the floor: parallel OpenSSH (`xargs -P N ssh ... bash -s < probe`), same probe script
# Reports wall time, total CPU of the whole machine (from /proc/stat: client AND the hosts' sshd,
# which share the cores) and gpukit's own CPU and peak memory. Every repetition starts cold (fresh
# SSH control sockets for Ansible). Usage: bench/facts.sh [N...]   (default: 10 50 100)
# Env: REPS (default 3), LAB_ID (default 90), OUT (default bench/results/facts-<date>.md).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=/usr/local/go/bin:$PATH

sizes=("$@"); [ ${#sizes[@]} -gt 0 ] || sizes=(10 50 100)
REPS=${REPS:-3}
LAB_ID=${LAB_ID:-90}
LAB=test/lab/lab.sh
mkdir -p bench/results
OUT=${OUT:-bench/results/facts-$(date -u +%Y%m%d-%H%M%S).md}
work=$(mktemp -d)
cleanup() { "$LAB" --lab "$LAB_ID" release >/dev/null 2>&1 || true; rm -rf "$work"; }
trap cleanup EXIT

need=()
command -v ansible >/dev/null || need+=(ansible-core)
[ -x /usr/bin/time ] || need+=(time)
if [ ${#need[@]} -gt 0 ]; then
  apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${need[@]}" >/dev/null
fi
[ -x bin/gpukit ] || make build >/dev/null

# the same probe gpukit sends (prelude + probe.sh), for the OpenSSH floor
{ printf 'set -euo pipefail\nexport LC_ALL=C DEBIAN_FRONTEND=noninteractive\n'; cat pkg/scripts/probe.sh; } >"$work/probe.sh"

# busy jiffies of all CPUs (user nice system irq softirq steal), USER_HZ = 100
busy() { awk '/^cpu / {print $2+$3+$4+$7+$8+$9}' /proc/stat; }
now() { date +%s.%N; }

# measure NAME CMD...: appends "wall cpu" (seconds) to $work/NAME
measure() {
  local name=$1; shift
  local c0 t0 t1 c1
  c0=$(busy); t0=$(now)
  "$@" >"$work/$name.out" 2>"$work/$name.err" || true
  t1=$(now); c1=$(busy)
  echo "$(echo "$t1 - $t0" | bc -l) $(echo "($c1 - $c0) / 100" | bc -l)" >>"$work/$name"
}

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

printf '| hosts | tool | wall s | total CPU s | gpukit own CPU ms/host | gpukit peak RSS | wall vs floor | CPU vs floor |\n' >"$work/table"
printf '|---|---|---|---|---|---|---|---|\n' >>"$work/table"

for n in "${sizes[@]}"; do
  echo "== $n light hosts" >&2
  "$LAB" --lab "$LAB_ID" release >/dev/null 2>&1 || true
  inv=$("$LAB" --lab "$LAB_ID" up --light "$n" | tail -n 1)
  key=$(sed -n 's/^ *keyFile: *//p' "$inv" | head -n1)
  kh=$(sed -n 's/^ *knownHostsFile: *//p' "$inv" | head -n1)
  # every tool logs in as root: no sudo in any of the three paths
  sed 's/^\(  *user:\) .*/\1 root/' "$inv" >"$work/inv.yaml"
  sed -n 's/^ *address: *//p' "$work/inv.yaml" >"$work/addrs"
  [ "$(wc -l <"$work/addrs")" = "$n" ] || { echo "expected $n addresses in $inv" >&2; exit 1; }
  printf '[lab]\n' >"$work/hosts.ini"; sed 's/$/ ansible_user=root/' "$work/addrs" >>"$work/hosts.ini"
  rm -f "$work"/gpukit "$work"/ansible "$work"/openssh "$work"/gpukit.own
  for r in $(seq "$REPS"); do
    echo "   rep $r: gpukit" >&2
    measure gpukit /usr/bin/time -o "$work/time.$r" -f '%U %S %M' \
      bin/gpukit preflight -i "$work/inv.yaml" -o json --concurrency "$n" --log-dir "$work/logs"
    # GNU time puts "Command exited with non-zero status" first when preflight finds failures
    tail -n 1 "$work/time.$r" >>"$work/gpukit.own"
    grep -q '"type":"preflight-report"' "$work/gpukit.out" || { echo "gpukit produced no report:" >&2; tail "$work/gpukit.err" >&2; exit 1; }

    echo "   rep $r: ansible" >&2
    cp_dir=$(mktemp -d "$work/cp.XXXX")
    measure ansible env ANSIBLE_HOST_KEY_CHECKING=True ANSIBLE_PIPELINING=True ANSIBLE_GATHERING=explicit \
      ANSIBLE_SSH_ARGS="-o ControlMaster=auto -o ControlPersist=60s -o UserKnownHostsFile=$kh -o StrictHostKeyChecking=yes" \
      ANSIBLE_SSH_CONTROL_PATH_DIR="$cp_dir" ANSIBLE_PYTHON_INTERPRETER=/usr/bin/python3 ANSIBLE_LOCALHOST_WARNING=False \
      ansible all -i "$work/hosts.ini" -m setup -f "$n" --private-key "$key"
    ok=$(grep -c 'SUCCESS' "$work/ansible.out" || true)
    [ "$ok" = "$n" ] || { echo "ansible: $ok of $n hosts succeeded" >&2; tail -5 "$work/ansible.out" >&2; exit 1; }
    for sock in "$cp_dir"/*; do ssh -o ControlPath="$sock" -O exit x >/dev/null 2>&1 || true; done

    echo "   rep $r: openssh" >&2
    measure openssh sh -c "xargs -P '$n' -I{} sh -c 'ssh -i \"$key\" -o UserKnownHostsFile=\"$kh\" -o StrictHostKeyChecking=yes -o BatchMode=yes -o LogLevel=ERROR root@{} bash -s <\"$work/probe.sh\" >/dev/null' <\"$work/addrs\""
    [ ! -s "$work/openssh.err" ] || { echo "openssh floor failed:" >&2; cat "$work/openssh.err" >&2; exit 1; }
  done
  fw=$(cut -d' ' -f1 "$work/openssh" | median); fc=$(cut -d' ' -f2 "$work/openssh" | median)
  own=$(awk -v n="$n" '{print ($1+$2)*1000/n}' "$work/gpukit.own" | median)
  rss=$(awk '{print $3}' "$work/gpukit.own" | median)
  for tool in gpukit ansible openssh; do
    w=$(cut -d' ' -f1 "$work/$tool" | median); c=$(cut -d' ' -f2 "$work/$tool" | median)
    o="-"; m="-"
    if [ "$tool" = gpukit ]; then o=$(printf '%.2f' "$own"); m="$((rss / 1024)) MiB ($(echo "$rss / $n" | bc) KiB/host)"; fi
    printf '| %d | %s | %.2f | %.2f | %s | %s | %.2fx | %.2fx |\n' "$n" "$tool" "$w" "$c" "$o" "$m" \
      "$(echo "$w / $fw" | bc -l)" "$(echo "$c / $fc" | bc -l)" >>"$work/table"
  done
  "$LAB" --lab "$LAB_ID" release >/dev/null 2>&1 || true
done

{
  echo "# Fact gathering: gpukit vs Ansible vs parallel OpenSSH ($(date -u +%Y-%m-%d), $(nproc) cores, median of $REPS)"
  echo
  cat "$work/table"
} | tee "$OUT"
echo "results: $OUT" >&2
