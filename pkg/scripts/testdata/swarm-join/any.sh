set -euo pipefail
export LC_ALL=C DEBIAN_FRONTEND=noninteractive
# Joins the swarm through a manager with the join token $1 (it comes on
# stdin, like every argument, and is never printed). The request goes to the
# engine's API over docker's own connection to it (docker system dial-stdio),
# on stdin: `docker swarm join --token` would put the token on a command
# line, which every user of the host can read in the process list. Prints the
# node's ID.
manager=10.0.0.10:2377
if [ "$(docker info --format '{{.Swarm.LocalNodeState}}')" != active ]; then
  body=$(printf '{"ListenAddr":"%s","AdvertiseAddr":"%s","RemoteAddrs":["%s"],"JoinToken":"%s"}' '[fd00::11]:2377' fd00::11 "$manager" "$1")
  resp=$(printf 'POST /swarm/join HTTP/1.1\r\nHost: docker\r\nContent-Type: application/json\r\nContent-Length: %s\r\nConnection: close\r\n\r\n%s' "${#body}" "$body" | docker system dial-stdio)
  status=${resp%%$'\r'*}
  case $status in
    "HTTP/1."[01]" 200 "*) ;;
    *)
      echo "gpukit: joining the swarm through $manager failed: ${status:-the docker engine did not answer}: ${resp#*$'\r\n\r\n'}" >&2
      exit 1
      ;;
  esac
  echo "gpukit: joined the swarm through $manager"
fi
docker info --format 'node={{.Swarm.NodeID}}'
