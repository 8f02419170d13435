package upgrade

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Annotations a workload's pods carry to tell the upgrade about themselves.
const (
	// AnnotationTraining "true" marks a pod as training (never evicted
	// unless --force), "false" as not (drained like any pod).
	AnnotationTraining = "gpukit.dev/training"
	// AnnotationCheckpoint asks a training pod to checkpoint before the
	// upgrade waits for it: "signal:SIGUSR1" sends the signal to the
	// container's first process, "exec:COMMAND" runs COMMAND (sh -c) in it.
	AnnotationCheckpoint = "gpukit.dev/checkpoint"
	// AnnotationCheckpointTimeout bounds the hook (a Go duration, default
	// 5m).
	AnnotationCheckpointTimeout = "gpukit.dev/checkpoint-timeout"
	// AnnotationCheckpointContainer names the container the hook runs in
	// (default: the first that uses a GPU).
	AnnotationCheckpointContainer = "gpukit.dev/checkpoint-container"
)

// trainingKinds are the owners whose pods are training: Kubernetes Jobs (and
// what runs pods through them, JobSet), Kubeflow's training operators (v1)
// and trainer (v2), Volcano and Ray jobs, and Argo Workflows (the engine of
// Kubeflow Pipelines: a pipeline's GPU step is a Workflow's pod).
var trainingKinds = []string{"Job", "JobSet", "PyTorchJob", "TFJob", "MPIJob", "XGBoostJob", "PaddleJob", "JAXJob", "TrainJob", "RayJob", "VolcanoJob", "Workflow"}

// trainingLabels are set on pods by those controllers.
var trainingLabels = []string{"training.kubeflow.org/job-name", "trainer.kubeflow.org/trainjob-name", "jobset.sigs.k8s.io/jobset-name", "batch.kubernetes.io/job-name", "job-name", "volcano.sh/job-name", "workflows.argoproj.io/workflow"}

// UsesGPU says whether any container of p asks for an NVIDIA GPU
// (nvidia.com/gpu, or a MIG slice nvidia.com/mig-*).
func UsesGPU(p *corev1.Pod) bool {
	for _, c := range slices.Concat(p.Spec.InitContainers, p.Spec.Containers) {
		if gpuContainer(c) {
			return true
		}
	}
	return false
}

func gpuContainer(c corev1.Container) bool {
	for _, rl := range []corev1.ResourceList{c.Resources.Limits, c.Resources.Requests} {
		for name, q := range rl {
			if n := string(name); (n == "nvidia.com/gpu" || strings.HasPrefix(n, "nvidia.com/mig-")) && !q.IsZero() {
				return true
			}
		}
	}
	return false
}

// Training says whether p looks like training, and why: a pod using a GPU
// owned by a Job or a training CRD (or labelled by their controllers), or
// annotated so by the user. A finished pod is not training any more.
func Training(p *corev1.Pod) (bool, string) {
	if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		return false, ""
	}
	switch p.Annotations[AnnotationTraining] {
	case "true":
		return true, "annotated " + AnnotationTraining + "=true"
	case "false":
		return false, ""
	}
	if !UsesGPU(p) {
		return false, ""
	}
	for _, o := range p.OwnerReferences {
		if slices.Contains(trainingKinds, o.Kind) {
			return true, fmt.Sprintf("uses a GPU, owned by %s %s", o.Kind, o.Name)
		}
	}
	for _, l := range trainingLabels {
		if v, ok := p.Labels[l]; ok {
			return true, fmt.Sprintf("uses a GPU, labelled %s=%s", l, v)
		}
	}
	return false, ""
}

// Hook is a training pod's checkpoint request.
type Hook struct {
	// Signal (SIGUSR1) or Command (run with sh -c).
	Signal, Command string
	Container       string
	Timeout         time.Duration
}

// DefaultHookTimeout bounds a hook without its own timeout; MaxHookTimeout
// any hook (a drained node waits for it, and the rollout with it).
const (
	DefaultHookTimeout = 5 * time.Minute
	MaxHookTimeout     = time.Hour
)

var signals = []string{"SIGHUP", "SIGINT", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGTERM", "SIGCONT", "SIGWINCH"}

// HookOf reads p's checkpoint hook from its annotations; nil when it has
// none. A malformed one is an error naming the annotation: it is the
// workload owner's request, and doing something else would lose their
// checkpoint.
func HookOf(p *corev1.Pod) (*Hook, error) {
	h, err := parseHook(p.Annotations)
	if err != nil || h == nil {
		if err != nil {
			err = fmt.Errorf("pod %s/%s: %w", p.Namespace, p.Name, err)
		}
		return nil, err
	}
	h.Container = p.Annotations[AnnotationCheckpointContainer]
	if h.Container == "" {
		for _, c := range p.Spec.Containers {
			if gpuContainer(c) {
				h.Container = c.Name
				break
			}
		}
		if h.Container == "" && len(p.Spec.Containers) > 0 {
			h.Container = p.Spec.Containers[0].Name
		}
	}
	return h, nil
}

// parseHook reads a hook from a workload's annotations (a pod's) or labels
// (a swarm service's); nil when it has none.
func parseHook(meta map[string]string) (*Hook, error) {
	v, ok := meta[AnnotationCheckpoint]
	if !ok {
		return nil, nil
	}
	h := &Hook{Timeout: DefaultHookTimeout}
	kind, arg, _ := strings.Cut(strings.TrimSpace(v), ":")
	switch kind {
	case "signal":
		s := strings.ToUpper(strings.TrimSpace(arg))
		if !strings.HasPrefix(s, "SIG") {
			s = "SIG" + s
		}
		if !slices.Contains(signals, s) {
			return nil, fmt.Errorf("%s %q: want signal:NAME, one of %s", AnnotationCheckpoint, v, strings.Join(signals, ", "))
		}
		h.Signal = s
	case "exec":
		if strings.TrimSpace(arg) == "" {
			return nil, fmt.Errorf("%s %q: exec: needs a command", AnnotationCheckpoint, v)
		}
		h.Command = strings.TrimSpace(arg)
	default:
		return nil, fmt.Errorf("%s %q: want signal:NAME or exec:COMMAND", AnnotationCheckpoint, v)
	}
	if t, ok := meta[AnnotationCheckpointTimeout]; ok {
		d, err := time.ParseDuration(t)
		if err != nil || d <= 0 || d > MaxHookTimeout {
			return nil, fmt.Errorf("%s %q: want a duration such as 2m, at most %s", AnnotationCheckpointTimeout, t, MaxHookTimeout)
		}
		h.Timeout = d
	}
	return h, nil
}

// Describe says what the hook does, for the plan and the log.
func (h *Hook) Describe() string {
	in := ""
	if h.Container != "" {
		in = " in container " + h.Container
	}
	if h.Signal != "" {
		return fmt.Sprintf("send %s to the main process%s", h.Signal, in)
	}
	return fmt.Sprintf("run %q%s (within %s)", h.Command, in, h.Timeout)
}

// Argv is the command the hook runs in the container.
func (h *Hook) Argv() []string {
	if h.Signal != "" {
		return []string{"kill", "-s", strings.TrimPrefix(h.Signal, "SIG"), "1"}
	}
	return []string{"sh", "-c", h.Command}
}
