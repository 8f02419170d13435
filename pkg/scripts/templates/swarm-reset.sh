# Leaves the swarm and puts back the Docker and NVIDIA runtime settings that
# gpukit changed, from the originals kept under {{.BackupDir}}; docker restarts
# only when a file changed. Packages stay installed.
if command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; then
  case $(docker info --format '{{"{{.Swarm.LocalNodeState}}"}}') in
  active | pending | error)
    docker swarm leave --force >/dev/null
    echo "gpukit: left the swarm" ;;
  esac
fi
backup={{quote .BackupDir}}
changed=0
for f in /etc/docker/daemon.json /etc/nvidia-container-runtime/config.toml; do
  b="$backup/$(basename "$f")"
  if [ -e "$b" ]; then
    if ! cmp -s "$b" "$f"; then cp -p "$b" "$f"; changed=1; echo "gpukit: $f restored"; fi
    rm -f "$b"
  elif [ -e "$b.absent" ]; then
    if [ -e "$f" ]; then rm -f "$f"; changed=1; echo "gpukit: $f removed (gpukit created it)"; fi
    rm -f "$b.absent"
  fi
done
rmdir "$backup" 2>/dev/null || true
{{template "restartdocker"}}
if [ "$changed" = 1 ] && systemctl is-enabled docker >/dev/null 2>&1; then restart_docker; fi
