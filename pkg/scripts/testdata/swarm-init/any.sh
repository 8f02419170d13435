set -euo pipefail
export LC_ALL=C DEBIAN_FRONTEND=noninteractive
# Creates the swarm on its first manager. docker's own output names the
# worker join token: it goes nowhere. Prints the node's ID.
if [ "$(docker info --format '{{.Swarm.LocalNodeState}}')" != active ]; then
  docker swarm init --advertise-addr 10.0.0.10 --listen-addr 10.0.0.10:2377 >/dev/null
  echo "gpukit: swarm created"
fi
docker info --format 'node={{.Swarm.NodeID}}'
