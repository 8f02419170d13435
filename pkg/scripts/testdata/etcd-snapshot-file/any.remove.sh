set -euo pipefail
export LC_ALL=C DEBIAN_FRONTEND=noninteractive

# Removes a snapshot gpukit etcd backup copied back and checked.
rm -f -- /var/lib/gpukit/etcd-snapshots/backup-20261205T000000Z.db
echo "gpukit: removed /var/lib/gpukit/etcd-snapshots/backup-20261205T000000Z.db"
