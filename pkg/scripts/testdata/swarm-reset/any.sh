set -euo pipefail
export LC_ALL=C DEBIAN_FRONTEND=noninteractive
# Leaves the swarm and puts back the Docker and NVIDIA runtime settings that
# gpukit changed, from the originals kept under /var/lib/gpukit/swarm/originals; docker restarts
# when a file changed, or when it still holds the swarm's ports after
# leaving. Packages stay installed.
# listening_ports: the TCP ports something listens on (state 0A), one per
# line, from the kernel's tables: no dependency on ss or netstat.
listening_ports() {
  local f local_ state
  for f in /proc/net/tcp /proc/net/tcp6; do
    [ -r "$f" ] || continue
    {
      read -r _ || continue # the header
      while read -r _ local_ _ state _; do
        if [ "$state" = 0A ]; then echo "$((16#${local_##*:}))"; fi
      done
    } <"$f"
  done
}
# swarm_ports_open: something listens on 2377 or 7946.
swarm_ports_open() { listening_ports | grep -xE '2377|7946' >/dev/null; } # not -q: under pipefail an early exit would be a SIGPIPE failure
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
restart=0
if command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; then
  case $(docker info --format '{{.Swarm.LocalNodeState}}') in
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
backup=/var/lib/gpukit/swarm/originals
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
