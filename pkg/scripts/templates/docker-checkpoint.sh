# Asks a training task's container to checkpoint before its node's driver
# changes: $1 the container, then $2 a signal for its main process (docker
# kill: the image needs no kill of its own), or $3 a command run in it with
# sh -c, given $4 seconds.
cid=$1 signal=$2 cmd=$3 seconds=$4
if [ -n "$signal" ]; then
  docker kill --signal "$signal" "$cid" >/dev/null
  echo "gpukit: sent $signal to container ${cid:0:12}"
  exit 0
fi
timeout --kill-after=5 "$seconds" docker exec "$cid" sh -c "$cmd"
