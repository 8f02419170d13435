set -euo pipefail
export LC_ALL=C DEBIAN_FRONTEND=noninteractive
# The GPUs' full report, for their health (ECC, retired pages, remapped
# rows, throttling, fabric): nvidia-smi -q -x, or the text form where the
# XML is not available. Read-only.
# smi is nvidia-smi within a bound: on a wedged GPU it never returns, and the
# step would wait for its deadline with nothing said. 124: it did not answer.
smi() {
  local rc=0
  timeout -k 5 60 nvidia-smi "$@" || rc=$?
  if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then echo "nvidia-smi did not answer within 60s (a wedged GPU or driver)" >&2; fi
  return "$rc"
}
if ! smi -q -x 2>/dev/null; then
  smi -q
fi
