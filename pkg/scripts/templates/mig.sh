# gpukit: partition the GPUs as the inventory's MIG layout says. Run by
# gpukit, and at every boot by gpukit-mig.service before the kubelet and
# docker start: the MIG mode survives a reboot, the GPU instances do not.
# Written by gpukit; a change here is undone at its next run.
{{template "smi"}}
# The host's GPU consumers are stopped around a GPU reset (which fails while
# anything holds the GPU) and started again after it.
stopped=()
reset_gpu() {
  local unit
  for unit in {{quoteEach .Units}}; do
    if systemctl is-active --quiet "$unit" 2>/dev/null; then
      systemctl stop "$unit"
      stopped+=("$unit")
    fi
  done
  local rc=0
  smi -i "$1" -r || rc=$?
  for unit in "${stopped[@]}"; do systemctl start "$unit" || true; done
  stopped=()
  return "$rc"
}
mode() { smi -i "$1" --query-gpu=mig.mode.current,mig.mode.pending --format=csv,noheader | tr -d ' '; }
# The GPU's MIG devices' profiles, sorted, on one line.
instances() {
  smi -L | awk -v gpu="$1" '/^GPU / {cur = ($2 == gpu ":")} cur && $1 == "MIG" {print $2}' | sort | tr '\n' ' '
}
# set_mode GPU Enabled|Disabled
set_mode() {
  local want=$2 m
  m=$(mode "$1")
  [ "$m" = "$want,$want" ] && return 0
  if [ "${m%,*}" = Enabled ] && [ "$want" = Disabled ]; then
    smi mig -i "$1" -dci >/dev/null 2>&1 || true
    smi mig -i "$1" -dgi >/dev/null 2>&1 || true
  fi
  if [ "${m#*,}" != "$want" ]; then
    smi -i "$1" -mig "$([ "$want" = Enabled ] && echo 1 || echo 0)"
  fi
  m=$(mode "$1")
  if [ "$m" != "$want,$want" ]; then
    # Ampere applies a MIG mode change at the GPU's next reset.
    echo "gpukit: GPU $1: MIG mode ${m%,*}, pending ${m#*,}: resetting the GPU"
    if ! reset_gpu "$1" || [ "$(mode "$1")" != "$want,$want" ]; then
      echo "gpukit: GPU $1: the MIG mode change waits for a GPU reset that failed (a process holds the GPU, or the platform cannot reset it): reboot the host, and gpukit-mig.service applies the layout at boot" >&2
      exit 4
    fi
  fi
  echo "gpukit: GPU $1: MIG mode $want"
}
# set_instances GPU "SORTED PROFILES " ID,ID,...
set_instances() {
  local have
  have=$(instances "$1")
  [ "$have" = "$2" ] && return 0
  # Destroying fails while a process uses an instance: nothing is
  # destroyed then, and the error says which.
  smi mig -i "$1" -dci >/dev/null 2>&1 || true
  smi mig -i "$1" -dgi >/dev/null 2>&1 || true
  if [ -n "$3" ]; then smi mig -i "$1" -cgi "$3" -C; fi
  have=$(instances "$1")
  if [ "$have" != "$2" ]; then
    echo "gpukit: GPU $1: MIG devices are '${have% }' after creating '${2% }'" >&2
    exit 5
  fi
}
{{- range .GPUs}}
{{- if .Enabled}}
set_mode {{.Index}} Enabled
set_instances {{.Index}} {{.Sorted | quote}} {{.IDList | quote}}
{{- else}}
set_mode {{.Index}} Disabled
{{- end}}
{{- end}}
