#!/usr/bin/env bash
# demo.sh [HOSTS]: gpukit doing its main job on the local lab. A lab of HOSTS
# full hosts (systemd, OpenSSH, apt; default 3) comes up; the workers get the
# GPU SIMULATOR (test/gpusim, test only: simulated PCI GPUs replaying a real
# H100 nvidia-smi capture, and stand-in NVIDIA repositories with real .deb
# packages); then `gpukit plan`, `gpukit init` (NVIDIA driver, fabric manager,
# persistence daemon, CUDA toolkit, container toolkit, one reboot per host,
# verified with nvidia-smi) and a second `gpukit init`, which changes nothing.
# Needs root, the lab's dependencies (make deps), bin/gpukit (make build) and
# this machine's Debian mirror (the hosts' DKMS and build tools come from it,
# through the lab's caching proxy).
set -euo pipefail
cd "$(dirname "$0")/.."
hosts=${1:-3}
lab=test/lab/lab.sh
gpukit=bin/gpukit

inv=$("$lab" up "$hosts" | tail -n 1)
echo "lab inventory: $inv"
# The hosts' own package sources, as any installed host has.
sources=$("$lab" debian-mirror sources)
for i in $(seq 1 "$hosts"); do
	"$lab" ssh "lab-$i" 'cat >/etc/apt/sources.list.d/debian.sources' <<<"$sources"
done
if [ -d ../shared/fixtures/nvidia-smi ]; then
	gpu_inv=${inv%.yaml}-gpusim.yaml
	go run ./test/gpusim/cmd/gpusim-install -i "$inv" --hardware --inventory-out "$gpu_inv"
	inv=$gpu_inv
else
	echo "../shared/fixtures/nvidia-smi is absent: no simulated GPUs, gpukit init finds none to set up"
fi
"$gpukit" inventory validate -i "$inv"
echo; echo "== gpukit plan: what init would change (nothing is changed)"
"$gpukit" plan -i "$inv"
echo; echo "== gpukit init"
"$gpukit" init -i "$inv"
echo; echo "== gpukit init again: a converged cluster, 0 changed"
"$gpukit" init -i "$inv"
echo
echo "The lab stays up for you to explore: $lab ssh lab-2 nvidia-smi; 'make lab-down' removes it."
