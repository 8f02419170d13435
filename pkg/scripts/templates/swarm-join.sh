# Joins the swarm through a manager with the join token $1 (it comes on
# stdin, like every argument, and is never printed). Prints the node's ID.
if [ "$(docker info --format '{{"{{.Swarm.LocalNodeState}}"}}')" != active ]; then
  docker swarm join --token "$1" --advertise-addr {{quote .AdvertiseAddr}} --listen-addr {{quote .ListenAddr}} {{quote .Manager}} >/dev/null
  echo "gpukit: joined the swarm through {{.Manager}}"
fi
docker info --format 'node={{"{{.Swarm.NodeID}}"}}'
