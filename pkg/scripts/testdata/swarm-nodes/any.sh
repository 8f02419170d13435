set -euo pipefail
export LC_ALL=C DEBIAN_FRONTEND=noninteractive
# Prints the nodes of the swarm named by their IDs ($@; none: every node)
# as `docker node inspect` shows them (a JSON array); changes nothing.
ids=("$@")
if [ "${#ids[@]}" -eq 0 ]; then
  mapfile -t ids < <(docker node ls -q)
fi
docker node inspect "${ids[@]}"
