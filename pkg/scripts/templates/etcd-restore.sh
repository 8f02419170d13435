{{- if eq .Step "stop"}}
# Stops this control plane for gpukit etcd restore: the static pods of etcd,
# the API server, the controller manager and the scheduler set aside
# (kept in {{.Hold}} until the restore starts them again), then waited for
# until their containers are gone. A stop already made is left as it is.
man=/etc/kubernetes/manifests
hold={{quote .Hold}}
mkdir -p "$hold"
chmod 0700 "$hold"
for c in etcd kube-apiserver kube-controller-manager kube-scheduler; do
  if [ -f "$man/$c.yaml" ]; then mv "$man/$c.yaml" "$hold/$c.yaml"; fi
done
until=$((SECONDS + {{.TimeoutSeconds}}))
while [ -n "$(crictl ps -q --name '^(etcd|kube-apiserver)$' 2>/dev/null)" ]; do
  if [ "$SECONDS" -ge "$until" ]; then
    echo "gpukit: etcd or the API server still runs {{.TimeoutSeconds}}s after their static pods were set aside (in $hold)" >&2
    exit 1
  fi
  sleep 1
done
echo "gpukit: etcd and the API server stopped (their static pods in $hold)"
{{- else if eq .Step "restore"}}
# Restores this control plane's etcd member from the snapshot gpukit
# uploaded, checked against its sha256 first: etcdutl snapshot restore into
# a new data directory (the revision bumped and compacted, so that every
# client's watch starts again), the member's data before kept in
# {{.Before}}, the new one moved into place.
{{template "etcd"}}
snap={{quote .Snapshot}}
data={{quote .DataDir}}
new="$data.gpukit-restore"
if ! echo {{quote .SHA256}}"  $snap" | sha256sum -c --quiet >/dev/null 2>&1; then
  echo "gpukit: $snap does not match its sha256 {{.SHA256}}: not restored" >&2
  exit 4
fi
if [ -n "$(crictl ps -q --name '^(etcd|kube-apiserver)$' 2>/dev/null)" ]; then
  echo "gpukit: etcd or the API server runs on this host: the restore stops them first" >&2
  exit 4
fi
rm -rf "$new"
args=(snapshot restore "$snap" --data-dir "$new" --name {{quote .Name}} --initial-cluster {{quote .InitialCluster}}
  --initial-cluster-token {{quote .Token}} --initial-advertise-peer-urls {{quote .PeerURL}}
  --bump-revision 1000000000 --mark-compacted)
if command -v etcdutl >/dev/null 2>&1; then
  etcdutl "${args[@]}"
else
  # the etcd image kubeadm runs ships etcdutl; containerd has it unpacked
  ctr -n k8s.io run --rm --net-host \
    --mount "type=bind,src=${snap%/*},dst=${snap%/*},options=rbind:rw" \
    --mount "type=bind,src=${data%/*},dst=${data%/*},options=rbind:rw" \
    {{quote .Image}} "gpukit-etcd-restore-$BASHPID" etcdutl "${args[@]}"
fi
before={{quote .Before}}
if [ -e "$data" ]; then
  mkdir -p "${before%/*}"
  mv "$data" "$before"
fi
mv "$new" "$data"
chmod 0700 "$data"
rm -f "$snap"
echo "gpukit: member {{.Name}} restored (its data before the restore: {{.Before}})"
{{- else if eq .Step "start"}}
# Starts this control plane again after gpukit etcd restore: the static
# pods set aside go back, the kubelet restarts (nothing it cached of the
# cluster before survives), and the member and this host's API server are
# waited for until healthy.
{{template "etcd"}}
man=/etc/kubernetes/manifests
hold={{quote .Hold}}
for c in etcd kube-apiserver kube-controller-manager kube-scheduler; do
  if [ -f "$hold/$c.yaml" ]; then mv "$hold/$c.yaml" "$man/$c.yaml"; fi
done
rmdir "$hold" 2>/dev/null || true
systemctl restart kubelet
until=$((SECONDS + {{.TimeoutSeconds}}))
until etcd_ctl endpoint health >/dev/null 2>&1; do
  if [ "$SECONDS" -ge "$until" ]; then
    echo "gpukit: etcd is not healthy {{.TimeoutSeconds}}s after the restore" >&2
    etcd_ctl endpoint health >&2 || true
    exit 1
  fi
  sleep 2
done
api=$(sed -n 's/^ *- --advertise-address=//p' "$man/kube-apiserver.yaml" | head -n1):$(sed -n 's/^ *- --secure-port=//p' "$man/kube-apiserver.yaml" | head -n1)
until kubectl --kubeconfig /etc/kubernetes/admin.conf --server "https://$api" get --raw=/readyz >/dev/null 2>&1; do
  if [ "$SECONDS" -ge "$until" ]; then
    echo "gpukit: the API server at $api is not ready {{.TimeoutSeconds}}s after the restore" >&2
    exit 1
  fi
  sleep 2
done
echo "gpukit: etcd healthy, the API server at $api ready"
{{- else}}
# Checks the cluster after gpukit etcd restore: every member listed and
# healthy, the API answering (key=value lines).
{{template "etcd"}}
echo "members=$(etcd_ctl member list | grep -c ', started, ')"
echo "healthy=$(etcd_ctl endpoint health --cluster 2>&1 | grep -c 'is healthy')"
echo "nodes=$(kubectl --kubeconfig /etc/kubernetes/admin.conf get nodes --no-headers | wc -l)"
{{- end}}
