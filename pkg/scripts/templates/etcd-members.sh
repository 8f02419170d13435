# Reads this control plane's etcd member and API server as kubeadm wrote
# their static pods (or as gpukit etcd restore set them aside, when a
# restore stopped part-way): key=value lines for gpukit etcd restore.
man=/etc/kubernetes/manifests
hold=/etc/kubernetes/gpukit-restore
flag() { sed -n "s/^ *- --$2=//p" "$1" | head -n1; }
etcd=$man/etcd.yaml api=$man/kube-apiserver.yaml stopped=0
if [ ! -f "$etcd" ] && [ -f "$hold/etcd.yaml" ]; then etcd=$hold/etcd.yaml stopped=1; fi
if [ ! -f "$api" ] && [ -f "$hold/kube-apiserver.yaml" ]; then api=$hold/kube-apiserver.yaml; fi
if [ ! -f "$etcd" ]; then
  echo "gpukit: no etcd static pod on this host ($man/etcd.yaml): not a control plane with kubeadm's stacked etcd" >&2
  exit 4
fi
echo "name=$(flag "$etcd" name)"
echo "peer=$(flag "$etcd" initial-advertise-peer-urls)"
echo "datadir=$(flag "$etcd" data-dir)"
echo "image=$(sed -n 's/^ *image: *//p' "$etcd" | head -n1)"
if [ -f "$api" ]; then echo "api=https://$(flag "$api" advertise-address):$(flag "$api" secure-port)"; fi
echo "stopped=$stopped"
