# Each GPU's state, for gpukit status: nvidia-smi's full report (ECC,
# remapped rows, temperatures, power, MIG, clocks, fabric), then the kernel's
# XID reports of this boot (NVRM: Xid lines; nvidia-smi -q shows none).
# Read-only.
{{template "smi"}}
if ! command -v nvidia-smi >/dev/null 2>&1; then
  echo "gpukit: no nvidia-smi"
  exit 0
fi
echo "=== nvidia-smi"
smi -q -x 2>&1 || smi -q 2>&1 || true
echo "=== xid"
{ journalctl -k -b --no-pager -o cat 2>/dev/null || dmesg 2>/dev/null || true; } | grep -E 'NVRM: Xid' | tail -n 100 || true
