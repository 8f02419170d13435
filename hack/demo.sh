#!/usr/bin/env bash
# demo.sh [HOSTS]: gpukit doing its main job on the local lab. A lab of HOSTS
# full hosts (systemd, OpenSSH, apt; default 3) comes up; the workers get the
# GPU SIMULATOR (test/gpusim, test only: simulated PCI GPUs replaying a real
# H100 nvidia-smi capture, and stand-in NVIDIA repositories with real .deb
# packages); then `gpukit plan`, `gpukit init` (NVIDIA driver, fabric manager,
# persistence daemon, CUDA toolkit, container toolkit, one reboot per host,
# verified with nvidia-smi) and a second `gpukit init`, which changes nothing.
# With the default ORCHESTRATOR=kubernetes the hosts are made for kubelet
# (lab.sh up --kube) and the lab becomes an air-gapped site's Kubernetes
# sources first (test/cluster/cmd/kube-site: kubeadm, kubelet, kubectl and
# containerd.io built from Go modules as stand-ins of pkgs.k8s.io's and
# Docker's packages, kubeadm's images in the lab registry as registry.k8s.io's
# mirror; the first build takes about 20 minutes, then it is cached): init
# goes on to a kubeadm cluster (1 control plane, 2 GPU workers), labels the
# GPU nodes, installs flannel from its chart archive in the fixtures cache
# (make fixtures; its images built from flannel's Go module) and writes its admin
# kubeconfig, which kubectl then uses from this machine: every node Ready.
# With ORCHESTRATOR=swarm the inventory says orchestrator: swarm (the first
# host the manager): init goes on to Docker (Debian's docker.io), the NVIDIA
# runtime as docker's default with the GPUs advertised, the swarm and node
# labels; then a service reserving one GPU runs on a GPU worker, and gpukit
# status lists the nodes.
# Needs root, the lab's dependencies (make deps), bin/gpukit (make build) and
# this machine's Debian mirror (the hosts' DKMS and build tools, and docker.io,
# come from it, through the lab's caching proxy).
set -euo pipefail
cd "$(dirname "$0")/.."
hosts=${1:-3}
orchestrator=${ORCHESTRATOR:-kubernetes}
case $orchestrator in
kubernetes | swarm) ;;
*)
	echo "ORCHESTRATOR=$orchestrator: want kubernetes or swarm" >&2
	exit 2
	;;
esac
lab=test/lab/lab.sh
gpukit=bin/gpukit

up_args=("$hosts")
if [ "$orchestrator" = kubernetes ]; then up_args=(--kube "$hosts"); fi
inv=$("$lab" up "${up_args[@]}" | tail -n 1)
echo "lab inventory: $inv"
# The hosts' own package sources, as any installed host has.
sources=$("$lab" debian-mirror sources)
for i in $(seq 1 "$hosts"); do
	"$lab" ssh "lab-$i" 'cat >/etc/apt/sources.list.d/debian.sources' <<<"$sources"
done
gpu_inv=${inv%.yaml}-gpusim.yaml
go run ./test/gpusim/cmd/gpusim-install -i "$inv" --hardware --inventory-out "$gpu_inv"
inv=$gpu_inv
if [ "$orchestrator" = kubernetes ]; then
	echo "== the lab as an air-gapped site: Kubernetes packages and images (built from Go modules; cached after the first time)"
	kube_inv=${inv%.yaml}-kubernetes.yaml
	go run ./test/cluster/cmd/kube-site -i "$inv" --inventory-out "$kube_inv"
	inv=$kube_inv
fi
if [ "$orchestrator" = swarm ]; then
	swarm_inv=${inv%.yaml}-swarm.yaml
	sed -e 's/^spec:$/spec:\n  orchestrator: swarm/' -e '0,/roles: \[control-plane\]/s//roles: [manager]/' "$inv" >"$swarm_inv"
	inv=$swarm_inv
fi
"$gpukit" inventory validate -i "$inv"
echo; echo "== gpukit plan: what init would change (nothing is changed)"
"$gpukit" plan -i "$inv"
echo; echo "== gpukit init"
kubeconfig=$(dirname "$inv")/demo.kubeconfig
"$gpukit" init -i "$inv" --kubeconfig-out "$kubeconfig"
echo; echo "== gpukit init again: a converged cluster, 0 changed"
"$gpukit" init -i "$inv" --kubeconfig-out "$kubeconfig"
if [ "$orchestrator" = kubernetes ]; then
	kubectl="$(test/k8s/build.sh)/kubectl"
	echo; echo "== kubectl --kubeconfig $kubeconfig get nodes -o wide"
	"$kubectl" --kubeconfig "$kubeconfig" get nodes -o wide
	echo; echo "== the GPU labels gpukit put on the nodes (nodeSelector: gpukit.dev/gpu.product: ...)"
	"$kubectl" --kubeconfig "$kubeconfig" get nodes -L gpukit.dev/gpu.product,gpukit.dev/gpu.count,gpukit.dev/nvidia.driver,gpukit.dev/nvidia.cuda
	"$kubectl" --kubeconfig "$kubeconfig" get pods -A -o wide
fi
if [ "$orchestrator" = swarm ]; then
	echo; echo "== gpukit status"
	"$gpukit" status -i "$inv"
	echo; echo "== a service reserving one GPU (docker service create --generic-resource NVIDIA-GPU=1)"
	# No registry is reachable from the lab: a static busybox from Debian, imported on each host.
	for i in $(seq 1 "$hosts"); do
		"$lab" ssh "lab-$i" bash -s <<-'EOF' &
			set -e
			DEBIAN_FRONTEND=noninteractive apt-get -qq install -y busybox-static >/dev/null 2>&1
			d=$(mktemp -d); mkdir -p "$d/bin"; cp /bin/busybox "$d/bin/"
			for a in sh cat tr sleep; do ln -s busybox "$d/bin/$a"; done
			tar -C "$d" -c . | docker import - gpukit-lab/busybox:1 >/dev/null; rm -rf "$d"
		EOF
	done
	wait
	# The task's process environment: Swarm's assignment, and what the (simulated) NVIDIA runtime made of it.
	"$lab" ssh lab-1 bash -s <<-'EOF'
		docker service rm demo-gpu >/dev/null 2>&1 || true
		docker service create -q --detach=false --name demo-gpu --generic-resource NVIDIA-GPU=1 gpukit-lab/busybox:1 \
			sh -c 'tr "\0" "\n" </proc/1/environ; sleep 3600' >/dev/null 2>&1
		docker service ps demo-gpu --format 'task {{.Name}} on {{.Node}}: {{.CurrentState}}'
		sleep 1
		docker service logs --raw demo-gpu 2>/dev/null | grep -E '^(DOCKER_RESOURCE|NVIDIA_VISIBLE|GPUSIM)'
		docker service rm demo-gpu >/dev/null
	EOF
fi
echo
echo "The lab stays up for you to explore: $lab ssh lab-2 nvidia-smi; 'make lab-down' removes it."
