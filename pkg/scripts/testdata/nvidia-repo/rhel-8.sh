set -euo pipefail
export LC_ALL=C DEBIAN_FRONTEND=noninteractive
# Makes the NVIDIA driver's packages available: NVIDIA's CUDA repository
# (or the site's mirror of it), or the distribution's own components that
# carry them. Idempotent: a repository already set up as wanted is left as
# it is, and the package index is refreshed only after a change.
# put FILE CONTENT: writes CONTENT (and a newline) to FILE, creating its
# directory, unless FILE holds it already; true when it wrote.
put() {
  if [ "$(cat "$1" 2>/dev/null)" = "$2" ]; then return 1; fi
  mkdir -p "${1%/*}"
  printf '%s\n' "$2" >"$1"
}
changed=0
base=https://developer.download.nvidia.com/compute/cuda/repos/rhel8/x86_64/
repo=/etc/yum.repos.d/cuda-rhel8.repo
want="[cuda-rhel8-x86_64]
name=cuda-rhel8-x86_64
baseurl=$base
enabled=1
gpgcheck=1
gpgkey=${base}D42D0685.pub"
if put "$repo" "$want"; then changed=1; fi
# DKMS and the driver's build dependencies: CRB (9) or PowerTools (8), and EPEL.
dnf config-manager --set-enabled powertools 2>/dev/null || true
if [ "$changed" = 1 ]; then dnf -q makecache; fi
if [ "$changed" = 1 ]; then echo "gpukit: package sources changed"; fi
