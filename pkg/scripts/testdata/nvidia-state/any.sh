set -euo pipefail
export LC_ALL=C DEBIAN_FRONTEND=noninteractive
# What of the NVIDIA stack is on this host, in one round trip. Read-only.
# Output: one "key=value" per line; list facts repeat their key. Every phase
# of the NVIDIA layer reads it before it decides, so a second run on a
# converged host finds nothing to do.
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
kv() { printf '%s=%s\n' "$1" "$2"; }
# rd VAR FILE: VAR is FILE's first line, or empty when FILE is missing or unreadable. A builtin
# read, not $(cat FILE): on a server with hundreds of PCI devices the forks were most of a
# probe's cost on the host. (Callers declare VAR: shellcheck cannot see the assignment.)
rd() {
  printf -v "$1" ''
  { IFS= read -r "$1" <"$2"; } 2>/dev/null || true
}
boot='' v='' vendor='' class='' # set by rd
k=$(uname -r)
kv kernel "$k"
rd boot /proc/sys/kernel/random/boot_id
kv boot_id "$boot"
if [ -e "/lib/modules/$k/build" ]; then kv headers yes; fi
kv module.installed "$(modinfo -F version nvidia 2>/dev/null || true)"
if [ -r /sys/module/nvidia/version ]; then rd v /sys/module/nvidia/version && kv module.loaded "$v"; fi
if [ -d /sys/module/nouveau ]; then kv nouveau.loaded yes; fi
if grep -qsE '^[[:space:]]*blacklist[[:space:]]+nouveau' /etc/modprobe.d/*.conf /usr/lib/modprobe.d/*.conf; then
  kv nouveau.blacklisted yes
fi
# gpukit's own marker lives on /run: a reboot clears it, which is its meaning.
if [ -e /run/gpukit/reboot-required ]; then
  kv reboot.required gpukit
  while IFS= read -r why; do kv reboot.why "$why"; done </run/gpukit/reboot-required
fi
if [ -e /var/run/reboot-required ]; then kv reboot.required system; fi

# Installed packages of the stack, with their hold state.
if command -v dpkg-query >/dev/null 2>&1; then
  held=" $(apt-mark showhold 2>/dev/null | tr '\n' ' ') "
  while read -r name version status; do
    [ "$status" = installed ] || continue
    h=no
    case $held in *" $name "*) h=yes ;; esac
    kv pkg "$name $version $h"
  done < <(dpkg-query -W -f='${Package} ${Version} ${db:Status-Status}\n' \
    'nvidia-*' 'libnvidia-*' 'cuda-*' 'libcuda*' 'firmware-nvidia-*' 'xserver-xorg-video-nvidia*' dkms 2>/dev/null || true)
  if [ -e /etc/apt/apt.conf.d/51gpukit-nvidia ]; then kv unattended.blacklist yes; fi
elif command -v rpm >/dev/null 2>&1; then
  locked=" $(dnf -q versionlock list 2>/dev/null | tr '\n' ' ') "
  while read -r name version; do
    h=no
    case $locked in *"$name-"*) h=yes ;; esac
    kv pkg "$name $version $h"
  done < <(rpm -qa --qf '%{NAME} %{VERSION}-%{RELEASE}\n' 'nvidia*' 'libnvidia*' 'cuda*' 'kmod-nvidia*' dkms 2>/dev/null || true)
fi

if [ -e /etc/systemd/system/nvidia-persistenced.service.d/gpukit.conf ]; then kv persistenced.dropin yes; fi
if grep -qs nvidia /etc/docker/daemon.json; then kv runtime.nvidia docker; fi
if grep -rqs nvidia /etc/containerd/config.toml /etc/containerd/conf.d; then kv runtime.nvidia containerd; fi
if [ -d /run/systemd/system ]; then
  for s in nvidia-persistenced nvidia-fabricmanager; do
    kv service "$s $(systemctl is-enabled "$s" 2>/dev/null || true) $(systemctl is-active "$s" 2>/dev/null || true)"
  done
fi
# NVSwitch (HGX/DGX): the driver's view, else the PCI bus (vendor 0x10de, bridge class 0x0680).
n=0
for dev in /sys/bus/pci/devices/*; do
  rd vendor "$dev/vendor"
  [ "$vendor" = 0x10de ] || continue
  rd class "$dev/class"
  if [ "$class" = 0x068000 ]; then n=$((n + 1)); fi
done
kv nvswitch.pci "$n"
if [ -d /proc/driver/nvidia-nvswitch/devices ]; then kv nvswitch.driver "$(find /proc/driver/nvidia-nvswitch/devices -mindepth 1 -maxdepth 1 | wc -l)"; fi
if [ -e /etc/dgx-release ]; then kv dgx yes; fi
if command -v nvidia-smi >/dev/null 2>&1; then
  if out=$(smi --query-gpu=index,uuid,name,memory.total,driver_version,mig.mode.current,persistence_mode,pci.bus_id,mig.mode.pending --format=csv,noheader,nounits 2>&1); then
    while IFS= read -r line; do kv smi.gpu "$line"; done <<<"$out"
    # MIG devices (-L), and the GPU-instance profiles of GPUs whose MIG mode
# is on (the sixth --query-gpu field): nvidia-smi lists none for the others.
if list=$(smi -L 2>/dev/null); then
  while IFS= read -r line; do kv smi.list "$line"; done <<<"$list"
fi
if awk -F', *' '$6 == "Enabled" {f = 1} END {exit !f}' <<<"$out" && lgip=$(smi mig -lgip 2>/dev/null); then
  while IFS= read -r line; do kv smi.lgip "$line"; done <<<"$lgip"
fi
  else
    kv smi.error "$(printf '%s' "$out" | tr '\n' ' ')"
  fi
fi
# gpukit's MIG layout, applied at every boot.
if [ -r /usr/local/lib/gpukit/mig.sh ]; then kv mig.script "$(sha256sum /usr/local/lib/gpukit/mig.sh | cut -d' ' -f1)"; fi
if [ -e /etc/systemd/system/gpukit-mig.service ]; then kv mig.unit "$(systemctl is-enabled gpukit-mig.service 2>/dev/null || true)"; fi
