// Package etcd is the etcd of a kubeadm cluster's control planes (kubeadm's
// stacked members): `gpukit etcd backup` (a snapshot taken on the first
// control plane, copied back to this machine with its sha256), `gpukit etcd
// restore` (every control plane stopped, restored from the snapshot, started
// and the cluster checked) and the scheduled backup init installs on the
// control planes (a systemd timer keeping the newest snapshots).
//
// The members run etcdctl and etcdutl from kubeadm's own etcd image (where
// registry.k8s.io/etcd has them) when the host has none: nothing is
// installed for them.
package etcd
