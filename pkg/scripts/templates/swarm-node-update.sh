# Changes nodes of the swarm, one `docker node update` per node. Arguments,
# repeated: the node ID, a count N, then N words of options (--label-add
# KEY=VALUE, --label-rm KEY, --role worker).
while [ $# -gt 0 ]; do
  id=$1 n=$2
  shift 2
  docker node update "${@:1:n}" "$id" >/dev/null
  echo "gpukit: node $id: ${*:1:n}"
  shift "$n"
done
