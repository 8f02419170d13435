//go:build tools

// flannel for the lab's Kubernetes hosts, built from these modules by
// ../build.sh flannel: flanneld and install-conf (the kube-flannel image of
// flannel's chart) and, from the nested module cni, the flannel CNI plugin
// (the flannel-cni-plugin image). Importing them here makes `go mod tidy`
// record every go.sum entry they need.
package tools

import (
	_ "github.com/flannel-io/flannel"
	_ "github.com/flannel-io/flannel/cmd/install_conf"
)
