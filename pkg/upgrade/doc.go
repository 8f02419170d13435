// Package upgrade is `gpukit upgrade driver`'s rollout: which GPU nodes are
// upgraded, in which waves (never more than the budget out of service at
// once, failures counted against it), what is done to each node before and
// after the NVIDIA layer's phases change its driver (cordon; training
// workloads asked to checkpoint and waited for, never evicted unless forced;
// drain; the host's GPU consumers stopped; the GPUs advertised again;
// uncordon), and the rollout's state on this machine, so that a run stopped
// by Ctrl-C or a crash resumes where it was.
//
// The phases and the wave planner work through an Orchestrator: Kube
// (Kubernetes' API: cordon, kubectl's drain through PodDisruptionBudgets,
// the device plugin) or Swarm (the first manager's docker: the drain is
// the cordon, see cordoner).
package upgrade
