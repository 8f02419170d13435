# An etcd snapshot of this control plane's member (kubeadm's stacked etcd),
# kept in {{.Dir}}: before a rollout (undone with gpukit etcd restore if the
# control plane goes wrong), or for gpukit etcd backup to copy back. Its
# size and sha256 are printed for the copy's check.
{{template "etcd"}}
out={{quote .Dir}}/{{quote .Name}}
etcd_snapshot "$out"
echo "gpukit: etcd snapshot $out ($(stat -c %s "$out") bytes)"
echo "sha256=$(sha256sum "$out" | cut -d' ' -f1)"
