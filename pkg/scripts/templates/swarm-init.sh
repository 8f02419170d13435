# Creates the swarm on its first manager. docker's own output names the
# worker join token: it goes nowhere. Prints the node's ID.
if [ "$(docker info --format '{{"{{.Swarm.LocalNodeState}}"}}')" != active ]; then
  docker swarm init --advertise-addr {{quote .AdvertiseAddr}} --listen-addr {{quote .ListenAddr}} >/dev/null
  echo "gpukit: swarm created"
fi
docker info --format 'node={{"{{.Swarm.NodeID}}"}}'
