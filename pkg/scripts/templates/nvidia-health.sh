# The GPUs' full report, for their health (ECC, retired pages, remapped
# rows, throttling, fabric): nvidia-smi -q -x, or the text form where the
# XML is not available. Read-only.
{{template "smi"}}
if ! smi -q -x 2>/dev/null; then
  smi -q
fi
