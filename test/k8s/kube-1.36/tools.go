//go:build tools

// The binaries of the test control plane and of the lab's Kubernetes
// packages, built from these modules by build.sh; importing them here makes
// `go mod tidy` record every go.sum entry they need.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubeadm"
	_ "k8s.io/kubernetes/cmd/kubectl"
	_ "k8s.io/kubernetes/cmd/kubelet"

	// etcd's tools, in the lab's etcd image as in registry.k8s.io/etcd:
	// `gpukit etcd backup` and restore run them there.
	_ "go.etcd.io/etcd/etcdctl/v3"
	_ "go.etcd.io/etcd/etcdutl/v3"
)
