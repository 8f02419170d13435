set -euo pipefail
export LC_ALL=C DEBIAN_FRONTEND=noninteractive
# Installs the CUDA toolkit 13.0 (compilers and libraries for building
# on the host; containers bring their own) as cuda-toolkit-13-0,
# which stays within 13.0; the driver was checked against it before.
dnf install -y -q cuda-toolkit-13-0
# Where the toolkit puts nvcc; login shells find it through the profile.
cat >/etc/profile.d/gpukit-cuda.sh <<'PROFILE'
# Written by gpukit: the CUDA toolkit 13.0.
case ":$PATH:" in *:/usr/local/cuda-13.0/bin:*) ;; *) PATH=/usr/local/cuda-13.0/bin:$PATH ;; esac
PROFILE
test -x /usr/local/cuda-13.0/bin/nvcc && /usr/local/cuda-13.0/bin/nvcc --version | tail -n 2
