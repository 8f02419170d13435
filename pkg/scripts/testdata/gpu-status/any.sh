set -euo pipefail
export LC_ALL=C DEBIAN_FRONTEND=noninteractive
# Each GPU's state, for gpukit status: nvidia-smi's full report (ECC,
# remapped rows, temperatures, power, MIG, clocks, fabric), then the kernel's
# XID reports of this boot (NVRM: Xid lines; nvidia-smi -q shows none).
# Read-only.
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
if ! command -v nvidia-smi >/dev/null 2>&1; then
  echo "gpukit: no nvidia-smi"
  exit 0
fi
echo "=== nvidia-smi"
smi -q -x 2>&1 || smi -q 2>&1 || true
echo "=== xid"
{ journalctl -k -b --no-pager -o cat 2>/dev/null || dmesg 2>/dev/null || true; } | grep -E 'NVRM: Xid' | tail -n 100 || true
