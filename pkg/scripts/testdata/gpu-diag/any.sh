set -euo pipefail
export LC_ALL=C DEBIAN_FRONTEND=noninteractive
# gpukit verify: NVIDIA DCGM's diagnostic at level 2 on this host's
# GPUs. It reads and stresses the GPUs and changes no setting. Without DCGM
# the test is not run, and says so: never a pass.
if ! command -v dcgmi >/dev/null 2>&1; then
  echo "gpukit: not run: no dcgmi on the host (NVIDIA's datacenter-gpu-manager package)"
  exit 0
fi
# dcgmi talks to the host engine: DCGM's service, or one started for this
# run and stopped after it.
started=
if ! dcgmi discovery -l >/dev/null 2>&1; then
  if command -v nv-hostengine >/dev/null 2>&1 && nv-hostengine >/dev/null 2>&1; then
    started=1
  else
    echo "gpukit: not run: DCGM's host engine does not answer (systemctl status nvidia-dcgm)"
    exit 0
  fi
fi
rc=0
timeout -k 10 900 dcgmi diag -r 2 || rc=$?
if [ -n "$started" ]; then nv-hostengine --term >/dev/null 2>&1 || true; fi
if [ "$rc" = 124 ]; then
  echo "gpukit: not run: dcgmi diag -r 2 did not finish within 900s"
fi
# A failing diagnostic exits non-zero and prints its table: the table is
# the verdict.
exit 0
