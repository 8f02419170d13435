set -euo pipefail
export LC_ALL=C DEBIAN_FRONTEND=noninteractive
# Deploys the stack $1 from /var/lib/gpukit/platform/$1/stack.yml (gpukit uploaded it, its
# configs and its secrets as one tar, files.tar, unpacked here with
# their modes) through this manager's docker, on the attachable
# overlay network the platform's stacks share; removes the stack's configs
# and secrets that the new deployment no longer names (those still in use
# stay); then waits up to $2 seconds for every service of the stack to run
# as many tasks as it wants, with no update under way, and says which
# did not.
stack=$1
timeout=$2
dir=/var/lib/gpukit/platform/$stack
net=gpukit-platform
tar -xf "$dir/files.tar" -C "$dir" --no-same-owner
rm -f "$dir/files.tar"
if ! docker network inspect "$net" >/dev/null 2>&1; then
  docker network create --driver overlay --attachable --label dev.gpukit.stack=platform "$net" >/dev/null
  echo "gpukit: network $net created"
fi
docker stack deploy --prune -c "$dir/stack.yml" "$stack"
for kind in config secret; do
  docker "$kind" ls --filter "label=dev.gpukit.stack=$stack" --format '{{.Name}}' | while read -r name; do
    if ! grep -qxF "$name" "$dir/names"; then
      if docker "$kind" rm "$name" >/dev/null 2>&1; then echo "gpukit: $kind $name removed (no longer deployed)"; fi
    fi
  done
done
converged() {
  local name replicas state ids
  while read -r name replicas _; do
    replicas=${replicas%% *}
    [ "${replicas%%/*}" = "${replicas##*/}" ] || return 1
  done < <(docker service ls --filter "label=com.docker.stack.namespace=$stack" --format '{{.Name}} {{.Replicas}}')
  mapfile -t ids < <(docker service ls -q --filter "label=com.docker.stack.namespace=$stack")
  [ "${#ids[@]}" -gt 0 ] || return 1
  while read -r name state; do
    case $state in updating | rollback_started | paused | rollback_paused) return 1 ;; esac
  done < <(docker service inspect --format '{{.Spec.Name}} {{if .UpdateStatus}}{{.UpdateStatus.State}}{{end}}' "${ids[@]}")
}
# failing: a task slot that failed or was rejected 4 times (its history
# full of them: a missing image, a bad option) will not get better.
failing() {
  docker stack ps --filter desired-state=shutdown --format '{{.Name}} {{.CurrentState}}' "$stack" 2>/dev/null |
    awk '$2 == "Failed" || $2 == "Rejected" { n[$1]++ } END { for (s in n) if (n[s] >= 4) { found = 1 } exit !found }'
}
deadline=$((SECONDS + timeout))
until converged; do
  if [ "$SECONDS" -ge "$deadline" ] || failing; then
    echo "gpukit: the services of $stack did not converge:" >&2
    docker service ls --filter "label=com.docker.stack.namespace=$stack" >&2
    docker stack ps --no-trunc --format '{{.Name}} {{.Node}} {{.DesiredState}} {{.CurrentState}} {{.Error}}' "$stack" 2>&1 | head -20 >&2 || true
    exit 1
  fi
  sleep 1
done
echo "gpukit: stack $stack running"
