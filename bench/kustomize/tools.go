//go:build tools

// Package tools pins the kustomize CLI the Kubeflow benchmark runs as the
// upstream installer's peer (bench/kubeflow.sh): v5.4.3, the version
// Kubeflow v1.10's README names.
package tools

import _ "sigs.k8s.io/kustomize/kustomize/v5"
