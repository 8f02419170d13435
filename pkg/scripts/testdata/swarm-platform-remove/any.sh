set -euo pipefail
export LC_ALL=C DEBIAN_FRONTEND=noninteractive
# Removes the swarm platform from this manager's swarm: the gpukit stacks
# ($@), then, once their services and tasks are gone, the network they
# shared, their configs and secrets, their volumes on this node and
# /var/lib/gpukit/platform. Prints what it removed; nothing when nothing was there.
dir=/var/lib/gpukit/platform
net=gpukit-platform
for stack in "$@"; do
  if [ -n "$(docker service ls -q --filter "label=com.docker.stack.namespace=$stack")" ]; then
    docker stack rm "$stack" >/dev/null
    echo "gpukit: stack $stack removed"
  fi
done
deadline=$((SECONDS + 300))
gone() {
  local stack
  for stack in "$@"; do
    [ -z "$(docker service ls -q --filter "label=com.docker.stack.namespace=$stack")" ] || return 1
    [ -z "$(docker ps -aq --filter "label=com.docker.stack.namespace=$stack")" ] || return 1
  done
}
until gone "$@"; do
  if [ "$SECONDS" -ge "$deadline" ]; then echo "gpukit: the platform's tasks are still running" >&2; exit 1; fi
  sleep 1
done
if docker network inspect "$net" >/dev/null 2>&1; then
  until docker network rm "$net" >/dev/null 2>&1; do
    if [ "$SECONDS" -ge "$deadline" ]; then echo "gpukit: network $net is still in use" >&2; exit 1; fi
    sleep 1
  done
  echo "gpukit: network $net removed"
fi
for kind in config secret; do
  docker "$kind" ls --filter label=dev.gpukit.stack --format '{{.Name}}' | while read -r name; do
    docker "$kind" rm "$name" >/dev/null && echo "gpukit: $kind $name removed"
  done
done
for stack in "$@"; do
  docker volume ls -q --filter "label=com.docker.stack.namespace=$stack" | while read -r v; do
    docker volume rm "$v" >/dev/null && echo "gpukit: volume $v removed"
  done
done
if [ -d "$dir" ]; then rm -rf "$dir"; echo "gpukit: $dir removed"; fi
