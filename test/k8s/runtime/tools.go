//go:build tools

// The node runtime of the lab's Kubernetes hosts, built from these modules by
// ../build.sh runtime: containerd 2 and runc (Debian 12 ships containerd 1.6,
// which Kubernetes 1.36+ refuses), crictl (Debian 12 has no cri-tools) and
// CoreDNS (the cluster DNS image kubeadm deploys). Importing them here makes
// `go mod tidy` record every go.sum entry they need.
package tools

import (
	_ "github.com/containerd/containerd/v2/cmd/containerd"
	_ "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2"
	_ "github.com/containerd/containerd/v2/cmd/ctr"
	_ "github.com/coredns/coredns"
	_ "github.com/opencontainers/runc"
	_ "sigs.k8s.io/cri-tools/cmd/crictl"
)
