# Writes Docker's daemon configuration ($1) and the NVIDIA container
# runtime's ($2; empty: left as it is), both rendered by gpukit from what the
# host had, so the user's other settings stay, and the registry mirror's CA
# ($3 the file, $4 its PEM; empty: none); restarts docker only when one of
# the first two changed. The first time gpukit changes a file it keeps the
# original under {{.BackupDir}} (gpukit reset puts it back).
{{template "put"}}
backup={{quote .BackupDir}}
# keep_original FILE: the file as it was before gpukit first changed it
# (FILE.absent when there was none).
keep_original() {
  local b
  b="$backup/$(basename "$1")"
  if [ -e "$b" ] || [ -e "$b.absent" ]; then return 0; fi
  mkdir -p "$backup"
  if [ -e "$1" ]; then cp -p "$1" "$b"; else : >"$b.absent"; fi
}
changed=0
daemon=/etc/docker/daemon.json
if [ "$(cat "$daemon" 2>/dev/null)" != "$1" ]; then
  keep_original "$daemon"
  put "$daemon" "$1"
  echo "gpukit: $daemon written"
  changed=1
fi
runtime=/etc/nvidia-container-runtime/config.toml
if [ -n "$2" ] && [ "$(cat "$runtime" 2>/dev/null)" != "$2" ]; then
  keep_original "$runtime"
  put "$runtime" "$2"
  echo "gpukit: $runtime written"
  changed=1
fi
# The registry mirror's CA ($3, $4): a file of gpukit's own name, which
# reset removes; docker reads it at each pull.
if [ -n "$3" ] && [ "$(cat "$3" 2>/dev/null)" != "$4" ]; then
  put "$3" "$4"
  echo "gpukit: $3 written"
fi
{{template "restartdocker"}}
if [ "$changed" = 1 ]; then restart_docker; fi
