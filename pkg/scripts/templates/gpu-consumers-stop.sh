# Before the driver's packages change: no process may be computing on the
# GPUs (the reboot that loads the new module would kill it: a training run
# started outside the orchestrator, in screen or under Slurm, loses its
# hours), then the host's own GPU consumers stop, so that the packages'
# scripts find the module unused. They start again at the boot that loads the
# new driver.
{{template "smi"}}
{{- if not .Force}}
if apps=$(smi --query-compute-apps=pid,process_name,used_memory --format=csv,noheader 2>/dev/null); then
  if [ -n "$apps" ]; then
    echo "gpukit: processes are computing on the GPUs (pid, name, memory):" >&2
    printf '%s\n' "$apps" >&2
    echo "gpukit: stop them, or let the upgrade end them (--force)" >&2
    exit 3
  fi
else
  echo "gpukit: nvidia-smi cannot list the GPUs' processes (the driver is not answering): none can be computing"
fi
{{- end}}
for unit in {{quoteEach .Units}}; do
  if systemctl is-active --quiet "$unit" 2>/dev/null; then
    systemctl stop "$unit"
    echo "gpukit: stopped $unit"
  fi
done
