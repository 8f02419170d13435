set -euo pipefail
export LC_ALL=C DEBIAN_FRONTEND=noninteractive
# Gathers every fact gpukit needs about a host in one round trip.
# Output: one "key=value" per line; list facts repeat their key. Read-only.
# Every probe tolerates a missing tool: minimal images lack lspci, mokutil, timedatectl.
# Conditionals are if-blocks, not `a && b`, so a false test never trips `set -e`.
# smi is nvidia-smi within a bound: on a wedged GPU it never returns, and the
# step would wait for its deadline with nothing said. 124: it did not answer;
# once it did not, later calls (a fallback to the text report) fail at once
# instead of waiting again.
smi_wedged=
smi() {
  local rc=0
  if [ -z "$smi_wedged" ]; then timeout -k 5 60 nvidia-smi "$@" || rc=$?; else rc=124; fi
  if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
    smi_wedged=1
    echo "nvidia-smi did not answer within 60s (a wedged GPU or driver)" >&2
  fi
  return "$rc"
}
# The facts go out in one write when the probe ends (also when it fails: the EXIT trap), not
# one per line: one SSH packet per host instead of dozens, for sshd and for gpukit.
facts=''
kv() { facts+="$1=$2"$'\n'; }
trap 'printf %s "$facts"' EXIT
# rd VAR FILE: VAR is FILE's first line, or empty when FILE is missing or unreadable. A builtin
# read, not $(cat FILE): on a server with hundreds of PCI devices the forks were most of a
# probe's cost on the host. (Callers declare VAR: shellcheck cannot see the assignment.)
rd() {
  printf -v "$1" ''
  { IFS= read -r "$1" <"$2"; } 2>/dev/null || true
}
hn='' online='' uuid='' mid='' vendor='' class='' device='' v='' comm='' # set by rd

# shellcheck disable=SC1091
if [ -r /etc/os-release ]; then . /etc/os-release; fi
kv os.id "${ID:-unknown}"
kv os.version "${VERSION_ID:-unknown}"
kv os.like "${ID_LIKE:-}"
kv os.pretty "${PRETTY_NAME:-}"
read -r kernel arch _ <<<"$(uname -rm)"
kv kernel "$kernel"
kv arch "$arch"
# The running kernel's headers (DKMS builds against them): a bundle needs
# their package only for a host that lacks them.
if [ -e "/lib/modules/$kernel/build" ]; then kv kernel.headers yes; else kv kernel.headers no; fi
rd hn /proc/sys/kernel/hostname
kv hostname "$hn"
# CPUs online, from the kernel's list of ranges ("0-63" or "0-3,8-11").
rd online /sys/devices/system/cpu/online
cpus=0
IFS=, read -ra ranges <<<"$online"
for r in "${ranges[@]}"; do
  if [[ $r =~ ^([0-9]+)-([0-9]+)$ ]]; then
    cpus=$((cpus + 10#${BASH_REMATCH[2]} - 10#${BASH_REMATCH[1]} + 1))
  elif [[ $r =~ ^[0-9]+$ ]]; then
    cpus=$((cpus + 1))
  fi
done
if [ "$cpus" = 0 ]; then cpus=$(getconf _NPROCESSORS_ONLN 2>/dev/null || grep -c ^processor /proc/cpuinfo); fi
kv cpus "$cpus"
while read -r key value _; do
  case "$key" in
    MemTotal:) kv mem.kib "$value" ;;
    SwapTotal:) kv swap.kib "$value" ;;
  esac
done </proc/meminfo
avail=
{ read -r _ && read -r _ _ _ avail _; } < <(df -Pk / 2>/dev/null) || true
kv root.avail.kib "$avail"
if command -v lsblk >/dev/null 2>&1; then
  while read -r name size type; do
    if [ "$type" = disk ]; then kv disk "$name $size"; fi
  done < <(lsblk -dbn -o NAME,SIZE,TYPE 2>/dev/null || true)
fi
rd uuid /sys/class/dmi/id/product_uuid
kv product_uuid "$uuid"
rd mid /etc/machine-id
kv machine_id "$mid"

# GPUs from the PCI bus: NVIDIA vendor 0x10de, class 0x03xxxx (VGA / 3D controller).
for dev in /sys/bus/pci/devices/*; do
  rd vendor "$dev/vendor"
  [ "$vendor" = 0x10de ] || continue
  rd class "$dev/class"
  case "$class" in 0x03*) ;; *) continue ;; esac
  rd device "$dev/device"
  kv pci.gpu "${dev##*/} $device"
done
if command -v nvidia-smi >/dev/null 2>&1; then
  kv nvidia_smi.present true
  # An error here (e.g. "Driver/library version mismatch") is itself a fact.
  if out=$(smi --query-gpu=index,uuid,name,memory.total,driver_version,mig.mode.current,persistence_mode,pci.bus_id,mig.mode.pending --format=csv,noheader,nounits 2>&1); then
    while IFS= read -r line; do kv nvidia_smi.gpu "$line"; done <<<"$out"
    # MIG devices (-L), and the GPU-instance profiles of GPUs whose MIG mode
# is on (the sixth --query-gpu field): nvidia-smi lists none for the others.
if list=$(smi -L 2>/dev/null); then
  while IFS= read -r line; do kv nvidia_smi.list "$line"; done <<<"$list"
fi
if awk -F', *' '$6 == "Enabled" {f = 1} END {exit !f}' <<<"$out" && lgip=$(smi mig -lgip 2>/dev/null); then
  while IFS= read -r line; do kv nvidia_smi.lgip "$line"; done <<<"$lgip"
fi
  else
    kv nvidia_smi.error "$(printf '%s' "$out" | tr '\n' ' ')"
  fi
fi
if [ -r /sys/module/nvidia/version ]; then rd v /sys/module/nvidia/version && kv nvidia.loaded "$v"; fi
if [ -d /sys/module/nouveau ]; then kv nouveau.loaded true; fi
if [ -e /etc/gpukit/proxy.env ]; then kv gpukit.proxy true; fi
# The host's own addresses (a node address must be one of them).
if command -v ip >/dev/null 2>&1; then
  while read -r _ dev _ addr _; do kv ip.addr "${dev%%@*} ${addr%/*}"; done < <(ip -o addr show scope global 2>/dev/null || true)
fi

# Secure Boot: mokutil when present, else the EFI variable (last byte 1 = on).
if command -v mokutil >/dev/null 2>&1; then
  kv secureboot "$(mokutil --sb-state 2>&1 | head -n1)"
elif [ -d /sys/firmware/efi ]; then
  sb=$(find /sys/firmware/efi/efivars -name 'SecureBoot-*' 2>/dev/null | head -n1)
  if [ -n "$sb" ]; then
    kv secureboot "efivar $(od -An -t u1 "$sb" 2>/dev/null | awk '{print $NF}')"
  else
    kv secureboot "efi without SecureBoot variable"
  fi
else
  kv secureboot "legacy BIOS"
fi

for rt in containerd dockerd crio; do
  command -v "$rt" >/dev/null 2>&1 || continue
  kv runtime "$rt $("$rt" --version 2>/dev/null | head -n1)"
done
# A swarm node's own ports (2377, 7946) are not someone else's.
if command -v docker >/dev/null 2>&1; then
  kv swarm "$(docker info --format '{{.Swarm.LocalNodeState}}' 2>/dev/null || true)"
fi
# Nor are a kubeadm node's (6443, 2379, 2380, 10250, ...): the API its
# kubelet talks to.
if [ -f /etc/kubernetes/kubelet.conf ]; then
  kv kubelet.server "$(awk '$1 == "server:" { print $2; exit }' /etc/kubernetes/kubelet.conf)"
fi

if [ -d /run/systemd/system ]; then
  kv init systemd
  kv timesync "$(timedatectl show -p NTPSynchronized --value 2>/dev/null)"
  # One systemctl call for all candidates: it prints one state per unit, in order.
  svcs=(chrony chronyd systemd-timesyncd ntp ntpd)
  i=0
  while read -r state; do
    if [ "$state" = active ]; then kv timesync.service "${svcs[$i]}"; fi
    i=$((i + 1))
  done < <(systemctl is-active "${svcs[@]}" 2>/dev/null || true)
else
  rd comm /proc/1/comm
  kv init "$comm"
fi

# listening_ports: the TCP ports something listens on (state 0A), one per
# line, from the kernel's tables: no dependency on ss or netstat.
listening_ports() {
  local f local_ state
  for f in /proc/net/tcp /proc/net/tcp6; do
    [ -r "$f" ] || continue
    {
      read -r _ || continue # the header
      while read -r _ local_ _ state _; do
        if [ "$state" = 0A ]; then echo "$((16#${local_##*:}))"; fi
      done
    } <"$f"
  done
}
while read -r port; do kv listen.tcp "$port"; done < <(listening_ports)
