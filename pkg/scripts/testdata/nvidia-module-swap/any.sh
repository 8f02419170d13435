set -euo pipefail
export LC_ALL=C DEBIAN_FRONTEND=noninteractive
# gpukit: put the driver on disk into memory without a reboot: the old
# kernel modules unloaded (their users first), the new ones loaded, checked,
# and the host's GPU consumers started again. Run on a drained host after
# the driver's packages changed. Whatever keeps a module in memory (a
# process computing or holding /dev/nvidia*, a module of another product,
# nouveau) makes it stop with exit 3 and a line "gpukit: not swapped: WHY":
# the host then reboots instead, as it would have without this, and its
# boot starts the consumers (the new ones do not run on the old module).
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
want=590.48.01
not_swapped() {
  echo "gpukit: not swapped: $*" >&2
  exit 3
}
loaded() { cat /sys/module/nvidia/version 2>/dev/null || true; }
if [ -d /sys/module/nouveau ]; then not_swapped "nouveau is loaded and holds the GPUs"; fi
before=$(loaded)
# nvidia-smi answers only while the library on disk matches the module in
# memory (not after the packages changed): the device files and the
# kernel's refusal below are what decide.
if [ -n "$before" ] && apps=$(smi --query-compute-apps=pid,process_name --format=csv,noheader 2>/dev/null) && [ -n "$apps" ]; then
  not_swapped "processes compute on the GPUs: $(printf '%s' "$apps" | tr '\n' ';')"
fi
units=(nvidia-persistenced nvidia-fabricmanager nvidia-dcgm dcgm)
start_units() {
  local unit
  for unit in "${units[@]}"; do
    if systemctl is-enabled --quiet "$unit" 2>/dev/null && ! systemctl is-active --quiet "$unit"; then
      systemctl start "$unit" && echo "gpukit: started $unit"
    fi
  done
}
for unit in "${units[@]}"; do
  if systemctl is-active --quiet "$unit" 2>/dev/null; then
    systemctl stop "$unit"
    echo "gpukit: stopped $unit"
  fi
done
# Processes that still hold the device files: a container of the
# orchestrator's (device plugin, DCGM exporter), a tool left running.
holders=''
for p in /proc/[0-9]*; do
  for f in "$p"/fd/*; do
    case $(readlink "$f" 2>/dev/null || true) in
    /dev/nvidia*)
      holders="$holders ${p#/proc/} ($(cat "$p/comm" 2>/dev/null || true))"
      break
      ;;
    esac
  done
done
if [ -n "$holders" ]; then not_swapped "processes hold /dev/nvidia*:$holders"; fi
# The modules that use nvidia go first; one gpukit does not know of (a
# vendor's, in holders/) keeps nvidia in memory and is named.
unloaded=()
for m in nvidia_drm nvidia_modeset nvidia_peermem nvidia_fs gdrdrv nvidia_uvm nvidia_vgpu_vfio nvidia; do
  [ -d "/sys/module/$m" ] || continue
  others=$(find "/sys/module/$m/holders" -mindepth 1 -maxdepth 1 -printf '%f ' 2>/dev/null || true)
  if [ -n "$others" ]; then not_swapped "module $m is used by ${others% }"; fi
  if ! out=$(modprobe -r "$m" 2>&1); then not_swapped "modprobe -r $m: $(printf '%s' "$out" | tr '\n' ' ')"; fi
  unloaded+=("$m")
done
[ "${#unloaded[@]}" -eq 0 ] || echo "gpukit: unloaded ${unloaded[*]} (driver ${before:-none})"
# The same modules again, at the release on disk; CUDA needs nvidia_uvm.
load=(nvidia nvidia_uvm)
for m in nvidia_modeset nvidia_drm nvidia_peermem; do
  case " ${unloaded[*]} " in *" $m "*) load+=("$m") ;; esac
done
for m in "${load[@]}"; do
  if ! out=$(modprobe "$m" 2>&1); then not_swapped "modprobe $m: $(printf '%s' "$out" | tr '\n' ' ')"; fi
done
now=$(loaded)
if [ "$now" != "$want" ]; then not_swapped "driver ${now:-none} loaded, $want installed"; fi
start_units
# A module loaded afresh has no MIG instances, as after a boot: the unit
# that applies the layout at boot applies it now.
if systemctl is-enabled --quiet gpukit-mig.service 2>/dev/null; then
  systemctl restart gpukit-mig.service
  echo "gpukit: MIG layout applied again (gpukit-mig.service)"
fi
# The reboot asked for by the driver's install is no longer needed.
if [ -e /run/gpukit/reboot-required ]; then
  sed -i '/^driver .* loaded, .* installed$/d' /run/gpukit/reboot-required
  [ -s /run/gpukit/reboot-required ] || rm -f /run/gpukit/reboot-required
fi
echo "gpukit: driver $want loaded without a reboot (was ${before:-none})"
