# Leaves the swarm and puts back the Docker and NVIDIA runtime settings that
# gpukit changed, from the originals kept under {{.BackupDir}}; docker restarts
# when a file changed, or when it still holds the swarm's ports after
# leaving. Packages stay installed.
{{template "listening"}}
# swarm_ports_open: something listens on 2377 or 7946.
swarm_ports_open() { listening_ports | grep -xE '2377|7946' >/dev/null; } # not -q: under pipefail an early exit would be a SIGPIPE failure
{{template "restartdocker"}}
restart=0
if command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; then
  case $(docker info --format '{{"{{.Swarm.LocalNodeState}}"}}') in
  active | pending | error)
    docker swarm leave --force >/dev/null
    echo "gpukit: left the swarm"
    # dockerd usually closes the swarm's ports (2377, 7946) a moment after it
    # left; a dockerd that keeps its gossip port open (seen on the last
    # manager of a swarm) is restarted, so that a next init finds it free.
    for _ in $(seq 20); do
      swarm_ports_open || break
      sleep 0.25
    done
    if swarm_ports_open; then
      echo "gpukit: docker still holds the swarm's ports"
      restart=1
    fi ;;
  esac
fi
backup={{quote .BackupDir}}
for f in /etc/docker/daemon.json /etc/nvidia-container-runtime/config.toml; do
  b="$backup/$(basename "$f")"
  if [ -e "$b" ]; then
    if ! cmp -s "$b" "$f"; then cp -p "$b" "$f"; restart=1; echo "gpukit: $f restored"; fi
    rm -f "$b"
  elif [ -e "$b.absent" ]; then
    if [ -e "$f" ]; then rm -f "$f"; restart=1; echo "gpukit: $f removed (gpukit created it)"; fi
    rm -f "$b.absent"
  fi
done
rmdir "$backup" 2>/dev/null || true
# the registry mirror's CA, which gpukit wrote under its own name
for f in /etc/docker/certs.d/*/gpukit-mirror-ca.crt; do
  if [ -e "$f" ]; then rm -f "$f"; rmdir "$(dirname "$f")" 2>/dev/null || true; echo "gpukit: $f removed"; fi
done
if [ "$restart" = 1 ] && systemctl is-enabled docker >/dev/null 2>&1; then restart_docker; fi
