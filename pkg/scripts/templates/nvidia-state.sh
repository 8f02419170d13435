# What of the NVIDIA stack is on this host, in one round trip. Read-only.
# Output: one "key=value" per line; list facts repeat their key. Every phase
# of the NVIDIA layer reads it before it decides, so a second run on a
# converged host finds nothing to do.
{{template "smi"}}
kv() { printf '%s=%s\n' "$1" "$2"; }
{{template "rd"}}
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
  if out=$(smi --query-gpu={{ join .GPUFields "," | quote }} --format=csv,noheader,nounits 2>&1); then
    while IFS= read -r line; do kv smi.gpu "$line"; done <<<"$out"
    {{template "migread" "smi"}}
  else
    kv smi.error "$(printf '%s' "$out" | tr '\n' ' ')"
  fi
fi
# gpukit's MIG layout, applied at every boot.
if [ -r /usr/local/lib/gpukit/mig.sh ]; then kv mig.script "$(sha256sum /usr/local/lib/gpukit/mig.sh | cut -d' ' -f1)"; fi
if [ -e /etc/systemd/system/gpukit-mig.service ]; then kv mig.unit "$(systemctl is-enabled gpukit-mig.service 2>/dev/null || true)"; fi
