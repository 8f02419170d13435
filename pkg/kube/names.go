package kube

import corev1 "k8s.io/api/core/v1"

// The node labels, taints, runtime class and resource names several layers
// share: the kubeadm layer puts them on the nodes (kubernetes/labels,
// kubernetes/gpu, its containerd configuration), the platform (pkg/kubeflow)
// and the upgrade (pkg/upgrade) select nodes and schedule pods by them.

// LabelPrefix starts every node label gpukit derives from a host's facts;
// those the facts no longer give are removed. The inventory's own labels
// are set as written and never removed (they are the user's). GPU feature
// discovery, where it runs, adds NVIDIA's nvidia.com/gpu.* labels beside
// these: gpukit's come from the host layer it installed, before any pod runs.
const LabelPrefix = "gpukit.dev/"

// Node labels from the facts, for nodeSelector and affinity
// (gpukit.dev/gpu.product: NVIDIA-H100-80GB-HBM3).
const (
	LabelGPUProduct = LabelPrefix + "gpu.product"
	LabelGPUCount   = LabelPrefix + "gpu.count"
	LabelGPUMemory  = LabelPrefix + "gpu.memory-mib"
	LabelDriver     = LabelPrefix + "nvidia.driver"
	LabelCUDA       = LabelPrefix + "nvidia.cuda"
	LabelGPUPresent = "nvidia.com/gpu.present"
	// LabelIngress marks the nodes of ingress hosts, where Traefik takes
	// ports 80 and 443.
	LabelIngress = LabelPrefix + "ingress"
)

// ControlPlaneTaint keeps workloads off control planes; gpukit leaves it
// off when no host is a worker (a single-node cluster must schedule there).
var ControlPlaneTaint = corev1.Taint{Key: "node-role.kubernetes.io/control-plane", Effect: corev1.TaintEffectNoSchedule}

// NVIDIARuntimeName is containerd's runtime handler for NVIDIA's runtime,
// and the RuntimeClass that selects it.
const NVIDIARuntimeName = "nvidia"

// GPUResource is the extended resource NVIDIA's device plugin advertises.
const GPUResource = "nvidia.com/gpu"
