set -euo pipefail
export LC_ALL=C DEBIAN_FRONTEND=noninteractive
# Drains the nodes named in the arguments ($@) that the cluster still lists
# (their pods evicted as PodDisruptionBudgets allow, DaemonSets' left alone,
# within 5m) and deletes them from the API, on a control plane that
# stays. With none of them listed it prints nothing and changes nothing.
export KUBECONFIG=/etc/kubernetes/admin.conf
listed=" $(kubectl get nodes -o 'jsonpath={.items[*].metadata.name}') "
for node in "$@"; do
  case $listed in *" $node "*) ;; *) continue ;; esac
  if ! out=$(kubectl drain "$node" --ignore-daemonsets --delete-emptydir-data --force --timeout=5m 2>&1); then
    printf '%s\n' "$out" | tail -n 10 >&2
    exit 1
  fi
  kubectl delete node "$node" >/dev/null
  echo "gpukit: $node drained and deleted from the cluster"
done
