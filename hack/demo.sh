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
# labels, then the platform's stacks (test/cluster/cmd/kube-site --swarm:
# their images in the lab registry as the site's mirror - the real Traefik,
# Prometheus, node exporter and statsd exporter built from Go modules,
# Grafana's labelled stand-in and the simulator's DCGM exporter): Traefik on
# the manager's ports 80 and 443, Prometheus and Grafana with gpukit's
# dashboards, the exporters; then a service reserving one GPU runs on a GPU
# worker, gpukit status lists the nodes and the platform, and Grafana
# answers through Traefik with TLS.
# Needs root, the lab's dependencies (make deps) and this machine's Debian
# mirror (the hosts' DKMS and build tools, and docker.io, come from it,
# through the lab's caching proxy); builds bin/gpukit (make build) and
# fetches the fixtures (make fixtures) itself.
#
# A first run compiles on both cores from its start while the lab base is
# made (I/O: debootstrap): the Kubernetes build runs in the background
# beside make build, and the demo's own tools (make demo-tools) are compiled
# with make build's toolchain and flags, so they reuse its packages instead of
# compiling gpukit again.
set -euo pipefail
cd "$(dirname "$0")/.."
began=$SECONDS
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
tools=bin/demo
first=

if [ "$orchestrator" = swarm ]; then
	# The platform's programs, built from Go modules (cached after the first time).
	if ! test/k8s/build.sh cached platform traefik; then
		first=1
		echo "== first run: the swarm platform's Prometheus, exporters and Traefik are compiled from their Go modules (test/k8s, about 12 minutes on 2 cores; cached after)"
	fi
	build_log=$(mktemp -t gpukit-demo-build.XXXXXX)
	setsid bash -c 'test/k8s/build.sh platform && test/k8s/build.sh traefik' >"$build_log" 2>&1 &
	k8s_build=$!
	trap 'kill -- -$k8s_build 2>/dev/null || true' EXIT
fi
if [ "$orchestrator" = kubernetes ]; then
	if ! test/k8s/build.sh cached demo; then
		first=1
		cat <<-EOF
			== first run: the lab is an air-gapped site, and its Kubernetes packages and images (kubeadm, kubelet,
			   kubectl, the control plane, containerd, runc, CoreDNS, flannel) are compiled from their Go modules
			   (test/k8s, about 4,500 packages) in the background while the lab comes up. On 2 cores this first
			   demo takes about 30 minutes, almost all of it compiling; the builds are cached in
			   ${GPUKIT_K8S_CACHE:-/var/tmp/gpukit-k8s/bin}, and later runs take about 4 minutes.
		EOF
	fi
	build_log=$(mktemp -t gpukit-demo-build.XXXXXX)
	# its own process group, so that leaving the demo (an error, Ctrl-C) stops the compilers too
	setsid test/k8s/build.sh demo >"$build_log" 2>&1 &
	k8s_build=$!
	trap 'kill -- -$k8s_build 2>/dev/null || true' EXIT
fi
make -s build demo-tools # into $tools
make -s fixtures || echo "demo: without the chart archives above, the cluster gets no pod network (nodes stay NotReady)" >&2

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
"$tools/gpusim-install" -i "$inv" --hardware --inventory-out "$gpu_inv"
inv=$gpu_inv
if [ "$orchestrator" = kubernetes ]; then
	echo "== the lab as an air-gapped site: Kubernetes packages and images (built from Go modules; cached after the first time)"
	kube_inv=${inv%.yaml}-kubernetes.yaml
	if ! wait "$k8s_build"; then
		echo "demo: building Kubernetes failed (test/k8s/build.sh demo; log: $build_log):" >&2
		tail -n 30 "$build_log" >&2
		exit 1
	fi
	rm -f "$build_log"
	"$tools/kube-site" -i "$inv" --inventory-out "$kube_inv"
	inv=$kube_inv
fi
if [ "$orchestrator" = swarm ]; then
	echo "== the lab as a swarm site: the platform's images in the lab registry, the site's mirror"
	if ! wait "$k8s_build"; then
		echo "demo: building the platform failed (test/k8s/build.sh platform traefik; log: $build_log):" >&2
		tail -n 30 "$build_log" >&2
		exit 1
	fi
	rm -f "$build_log"
	swarm_inv=${inv%.yaml}-swarm.yaml
	"$tools/kube-site" --swarm -i "$inv" --inventory-out "$swarm_inv"
	inv=$swarm_inv
fi
"$gpukit" inventory validate -i "$inv"
echo; echo "== gpukit plan: what init would change (nothing is changed)"
"$gpukit" plan -i "$inv"
echo; echo "== gpukit init"
kubeconfig=$(dirname "$inv")/demo.kubeconfig
credentials=$(dirname "$inv")/demo.credentials
"$gpukit" init -i "$inv" --kubeconfig-out "$kubeconfig" --credentials-out "$credentials"
echo; echo "== gpukit init again: a converged cluster, 0 changed"
"$gpukit" init -i "$inv" --kubeconfig-out "$kubeconfig" --credentials-out "$credentials"
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
	# Grafana by its name under the default domain (<manager>.nip.io), through Traefik,
	# trusting the certificate gpukit made; the name resolved here as nip.io would.
	ip=$(awk '/address:/ {print $2; exit}' "$inv")
	"$lab" ssh lab-1 cat /var/lib/gpukit/platform/gpukit-ingress/ingress.crt >"$(dirname "$inv")/ingress.crt"
	echo; echo "== Grafana through Traefik: curl https://grafana.$ip.nip.io/api/health (the login is in $credentials)"
	curl -sS --cacert "$(dirname "$inv")/ingress.crt" --resolve "grafana.$ip.nip.io:443:$ip" "https://grafana.$ip.nip.io/api/health"
fi
echo
took=$((SECONDS - began))
echo "The demo took $((took / 60))m$((took % 60))s${first:+ (a first run: most of it compiling Kubernetes from its Go modules)}."
echo "The lab stays up for you to explore: $lab ssh lab-2 nvidia-smi; 'make lab-down' removes it."
