set -euo pipefail
export LC_ALL=C DEBIAN_FRONTEND=noninteractive
# The GPUs' full report, for their health (ECC, retired pages, remapped
# rows, throttling, fabric): nvidia-smi -q -x, or the text form where the
# XML is not available. Read-only.
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
if ! smi -q -x 2>/dev/null; then
  smi -q
fi
