set -euo pipefail
export LC_ALL=C DEBIAN_FRONTEND=noninteractive
# Prints the tasks swarm nodes hold ($@: their IDs) and their services, one
# JSON object a line (docker inspect's): task=..., then service=...;
# changes nothing. Run on a manager. The tasks the swarm keeps as history
# (shut down, failed, rejected) are left out: a node's history is long. A
# job's complete tasks stay: they still hold the node's GPUs in the swarm's
# books.
errors=$(mktemp)
trap 'rm -f "$errors"' EXIT
# inspect TYPE FORMAT ID...: one line each; an object removed since it was
# listed is left out (docker prints an empty line for it), any other
# failure fails the script.
inspect() {
  local kind=$1 format=$2
  shift 2
  if ! docker inspect --type "$kind" --format "$format" "$@" 2>"$errors"; then
    if grep -viq 'no such' "$errors"; then
      cat "$errors" >&2
      exit 1
    fi
  fi
}
mapfile -t tasks < <(docker node ps --no-trunc --format '{{.ID}} {{.CurrentState}}' "$@" |
  awk '$2 !~ /^(Shutdown|Failed|Rejected|Remove|Orphaned)$/ {print $1}')
[ "${#tasks[@]}" -gt 0 ] || exit 0
inspect task '{{json .}}' "${tasks[@]}" | sed '/^$/d; s/^/task=/'
mapfile -t services < <(inspect task '{{.ServiceID}}' "${tasks[@]}" | sort -u)
[ "${#services[@]}" -gt 0 ] || exit 0
inspect service '{{json .}}' "${services[@]}" | sed '/^$/d; s/^/service=/'
