set -euo pipefail
export LC_ALL=C DEBIAN_FRONTEND=noninteractive
# The GPUs' full report, for their health (ECC, retired pages, remapped
# rows, throttling, fabric): nvidia-smi -q -x, or the text form where the
# XML is not available. Read-only.
if ! nvidia-smi -q -x 2>/dev/null; then
  nvidia-smi -q
fi
