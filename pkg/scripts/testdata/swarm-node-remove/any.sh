set -euo pipefail
export LC_ALL=C DEBIAN_FRONTEND=noninteractive
# Removes nodes that left the swarm from its list (their IDs are the
# arguments); a node already gone is not an error.
for id in "$@"; do
  if docker node inspect "$id" >/dev/null 2>&1; then
    docker node rm --force "$id" >/dev/null
    echo "gpukit: node $id removed"
  fi
done
