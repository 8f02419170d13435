set -euo pipefail
export LC_ALL=C DEBIAN_FRONTEND=noninteractive
# gpukit verify: NCCL's all-reduce bandwidth across this host's GPUs
# (nccl-tests' all_reduce_perf, one process driving every GPU: NVLink and
# NVSwitch, or PCIe). Without nccl-tests the test is not run, and says so.
# smi is nvidia-smi within a bound: on a wedged GPU it never returns, and the
# step would wait for its deadline with nothing said. 124: it did not answer;
# once it did not, later calls (a fallback to the text report) fail at once
# instead of waiting again.
smi_wedged=
smi() {
  local rc=0
  if [ -z "$smi_wedged" ]; then timeout -k 5 60 nvidia-smi "$@" || rc=$?; else rc=124; fi
  if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
    smi_wedged=1
    echo "nvidia-smi did not answer within 60s (a wedged GPU or driver)" >&2
  fi
  return "$rc"
}
bin=
for b in all_reduce_perf /usr/local/bin/all_reduce_perf /opt/nccl-tests/build/all_reduce_perf; do
  if command -v "$b" >/dev/null 2>&1; then bin=$(command -v "$b"); break; fi
done
if [ -z "$bin" ]; then
  echo "gpukit: not run: no nccl-tests on the host (all_reduce_perf in PATH or /usr/local/bin/all_reduce_perf, /opt/nccl-tests/build/all_reduce_perf)"
  exit 0
fi
gpus=$(smi --query-gpu=index --format=csv,noheader | wc -l)
if [ "$gpus" -lt 2 ]; then
  echo "gpukit: not run: $gpus GPU on the host: nothing to all-reduce between"
  exit 0
fi
rc=0
timeout -k 10 600 "$bin" -b 8M -e 4G -f 2 -g "$gpus" -w 5 -n 20 || rc=$?
if [ "$rc" = 124 ]; then
  echo "gpukit: not run: all_reduce_perf did not finish within 600s"
fi
exit 0
