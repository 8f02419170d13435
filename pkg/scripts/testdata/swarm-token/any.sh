set -euo pipefail
export LC_ALL=C DEBIAN_FRONTEND=noninteractive
# Prints the swarm's join token for the role $1 (worker or manager).
docker swarm join-token -q "$1"
