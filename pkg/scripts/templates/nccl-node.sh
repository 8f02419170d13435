# gpukit verify: NCCL's all-reduce bandwidth across this host's GPUs
# (nccl-tests' all_reduce_perf, one process driving every GPU: NVLink and
# NVSwitch, or PCIe). Without nccl-tests the test is not run, and says so.
{{template "smi"}}
bin=
for b in all_reduce_perf {{quoteEach .Paths}}; do
  if command -v "$b" >/dev/null 2>&1; then bin=$(command -v "$b"); break; fi
done
if [ -z "$bin" ]; then
  echo "gpukit: not run: no nccl-tests on the host (all_reduce_perf in PATH or {{join .Paths ", "}})"
  exit 0
fi
gpus=$(smi --query-gpu=index --format=csv,noheader | wc -l)
if [ "$gpus" -lt 2 ]; then
  echo "gpukit: not run: $gpus GPU on the host: nothing to all-reduce between"
  exit 0
fi
rc=0
timeout -k 10 {{.TimeoutSeconds}} "$bin" -b {{.MinBytes}} -e {{.MaxBytes}} -f 2 -g "$gpus" -w 5 -n 20 || rc=$?
if [ "$rc" = 124 ]; then
  echo "gpukit: not run: all_reduce_perf did not finish within {{.TimeoutSeconds}}s"
fi
exit 0
