set -euo pipefail
export LC_ALL=C DEBIAN_FRONTEND=noninteractive
# Leaves the swarm and puts back the Docker and NVIDIA runtime settings that
# gpukit changed, from the originals kept under /var/lib/gpukit/swarm/originals; docker restarts
# only when a file changed. Packages stay installed.
if command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; then
  case $(docker info --format '{{.Swarm.LocalNodeState}}') in
  active | pending | error)
    docker swarm leave --force >/dev/null
    echo "gpukit: left the swarm" ;;
  esac
fi
backup=/var/lib/gpukit/swarm/originals
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
# restart_docker: restarts docker and waits until it answers (a daemon that
# does not come back fails the script with its own words).
restart_docker() {
  local _
  systemctl reset-failed docker >/dev/null 2>&1 || true
  if ! systemctl restart docker; then
    journalctl -u docker -n 20 --no-pager >&2 2>/dev/null || true
    return 1
  fi
  for _ in $(seq 120); do
    if docker info >/dev/null 2>&1; then
      echo "gpukit: docker restarted"
      return 0
    fi
    sleep 0.5
  done
  echo "gpukit: docker did not answer within 60 s of its restart" >&2
  return 1
}
if [ "$changed" = 1 ] && systemctl is-enabled docker >/dev/null 2>&1; then restart_docker; fi
