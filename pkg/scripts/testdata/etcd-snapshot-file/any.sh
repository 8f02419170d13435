set -euo pipefail
export LC_ALL=C DEBIAN_FRONTEND=noninteractive

# Writes a snapshot to stdout, for gpukit etcd backup to copy back (the
# output is the snapshot itself: never logged).
exec cat -- /var/lib/gpukit/etcd-snapshots/backup-20261205T000000Z.db
