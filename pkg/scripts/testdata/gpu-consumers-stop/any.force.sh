set -euo pipefail
export LC_ALL=C DEBIAN_FRONTEND=noninteractive
# Before the driver's packages change: no process may be computing on the
# GPUs (the reboot that loads the new module would kill it: a training run
# started outside the orchestrator, in screen or under Slurm, loses its
# hours), then the host's own GPU consumers stop, so that the packages'
# scripts find the module unused. They start again at the boot that loads the
# new driver.
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
for unit in nvidia-persistenced nvidia-fabricmanager nvidia-dcgm dcgm; do
  if systemctl is-active --quiet "$unit" 2>/dev/null; then
    systemctl stop "$unit"
    echo "gpukit: stopped $unit"
  fi
done
