set -euo pipefail
export LC_ALL=C DEBIAN_FRONTEND=noninteractive

# kubeadm upgrade plan for v1.37.2: what kubeadm will change, shown
# before anything is (kubeadm v1.37.2 is installed first).
kubeadm upgrade plan v1.37.2 2>&1
