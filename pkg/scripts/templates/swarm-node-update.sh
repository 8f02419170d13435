# Changes nodes of the swarm, one `docker node update` per node. Arguments,
# repeated: the node ID, a count N, then N words of options (--label-add
# KEY=VALUE, --label-rm KEY, --role manager|worker). A promotion is done
# when the node is a reachable member of the raft, not when docker accepted
# it: the script waits for that (60 s at most), so that the next step (a
# demotion, a manager's join) meets a settled quorum.
promoted=()
while [ $# -gt 0 ]; do
  id=$1 n=$2
  shift 2
  docker node update "${@:1:n}" "$id" >/dev/null
  echo "gpukit: node $id: ${*:1:n}"
  case " ${*:1:n} " in *" --role manager "*) promoted+=("$id") ;; esac
  shift "$n"
done
for id in "${promoted[@]}"; do
  for _ in $(seq 120); do
    if [ "$(docker node inspect --format '{{"{{if .ManagerStatus}}{{.ManagerStatus.Reachability}}{{end}}"}}' "$id")" = reachable ]; then
      echo "gpukit: node $id is a reachable manager"
      continue 2
    fi
    sleep 0.5
  done
  echo "gpukit: node $id was promoted but is not a reachable manager after 60 s" >&2
  exit 1
done
