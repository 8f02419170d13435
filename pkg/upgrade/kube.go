package upgrade

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/kubectl/pkg/drain"

	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/facts"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/kube"
)

// AnnotationCordoned is put on a node gpukit cordons for the upgrade (the
// time): only such a node is uncordoned by gpukit, and a resumed run knows
// the nodes a killed one left out of service. A node cordoned without it is
// someone else's and is left alone unless named.
const AnnotationCordoned = "gpukit.dev/upgrade-cordoned"

// Kube does the upgrade's work on Kubernetes nodes through the API.
type Kube struct {
	Client kubernetes.Interface
	// Config is the client's REST configuration, for exec (checkpoint
	// hooks); nil: hooks cannot run.
	Config *rest.Config
	// Inventory names the hosts' nodes.
	Inventory *inventory.Inventory
	// Poll is how often waits look again (default 2s).
	Poll time.Duration
}

// KubeConnect reaches the API through api from the first control plane
// (kubeadm's layer, through its SSH connection) or from this machine with a
// kubeconfig (kube.Local), every request counted.
func KubeConnect(inv *inventory.Inventory, api kube.API, poll time.Duration) Connect {
	return func(ctx context.Context, h *engine.Host, count func()) (Orchestrator, error) {
		c, err := api.Client(ctx, h)
		if err != nil {
			return nil, err
		}
		if c == nil {
			return nil, fmt.Errorf("the cluster's API does not answer")
		}
		cfg := c.Config
		counted := *cfg
		counted.QPS, counted.Burst = max(cfg.QPS, 50), max(cfg.Burst, 100)
		counted.Wrap(func(rt http.RoundTripper) http.RoundTripper { return countingTransport{rt, count} })
		cs, err := kubernetes.NewForConfig(&counted)
		if err != nil {
			return nil, err
		}
		return &Kube{Client: cs, Config: &counted, Inventory: inv, Poll: poll}, nil
	}
}

type countingTransport struct {
	rt    http.RoundTripper
	count func()
}

func (t countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	t.count()
	return t.rt.RoundTrip(r)
}

// NodeName is the Kubernetes node of m.
func (k *Kube) NodeName(m inventory.Machine) string { return kube.NodeName(m) }

// Nodes lists the nodes.
func (k *Kube) Nodes(ctx context.Context) ([]Node, error) {
	list, err := k.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list the nodes: %w", err)
	}
	out := make([]Node, len(list.Items))
	for i := range list.Items {
		n := &list.Items[i]
		q := n.Status.Allocatable[kube.GPUResource]
		out[i] = Node{Name: n.Name, GPU: IsGPUNode(n), GPUs: q.Value(), Unschedulable: n.Spec.Unschedulable, Ours: CordonedByUs(n), Labels: n.Labels}
	}
	return out, nil
}

func (k *Kube) poll() time.Duration {
	if k.Poll > 0 {
		return k.Poll
	}
	return 2 * time.Second
}

// IsGPUNode says whether n has NVIDIA GPUs: advertised by the device
// plugin, or labelled present by gpukit or GPU feature discovery.
func IsGPUNode(n *corev1.Node) bool {
	if q, ok := n.Status.Capacity[kube.GPUResource]; ok && !q.IsZero() {
		return true
	}
	return n.Labels[kube.LabelGPUPresent] == "true"
}

// CordonedByUs says whether gpukit's upgrade cordoned n.
func CordonedByUs(n *corev1.Node) bool {
	_, ok := n.Annotations[AnnotationCordoned]
	return ok && n.Spec.Unschedulable
}

// Cordon makes the node unschedulable, marked as gpukit's, in one patch.
func (k *Kube) Cordon(ctx context.Context, name string, now time.Time) error {
	return k.patch(ctx, name, map[string]any{
		"metadata": map[string]any{"annotations": map[string]any{AnnotationCordoned: now.UTC().Format(time.RFC3339)}},
		"spec":     map[string]any{"unschedulable": true},
	})
}

// Uncordon makes the node schedulable again and drops gpukit's mark.
func (k *Kube) Uncordon(ctx context.Context, name string) error {
	return k.patch(ctx, name, map[string]any{
		"metadata": map[string]any{"annotations": map[string]any{AnnotationCordoned: nil}},
		"spec":     map[string]any{"unschedulable": nil},
	})
}

func (k *Kube) patch(ctx context.Context, name string, p map[string]any) error {
	b, err := json.Marshal(p)
	if err != nil {
		return err
	}
	_, err = k.Client.CoreV1().Nodes().Patch(ctx, name, types.MergePatchType, b, metav1.PatchOptions{FieldManager: "gpukit"})
	return err
}

// PodsOn lists the pods bound to the node that have not finished.
func (k *Kube) PodsOn(ctx context.Context, node string) ([]corev1.Pod, error) {
	list, err := k.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node})
	if err != nil {
		return nil, fmt.Errorf("list the pods on %s: %w", node, err)
	}
	var out []corev1.Pod
	for _, p := range list.Items {
		if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			out = append(out, p)
		}
	}
	return out, nil
}

// Training are the node's pods that look like training, with their hooks.
func (k *Kube) Training(ctx context.Context, node string) ([]Workload, error) {
	pods, err := k.PodsOn(ctx, node)
	if err != nil {
		return nil, err
	}
	var out []Workload
	for i := range pods {
		p := &pods[i]
		if ok, why := Training(p); ok {
			w := Workload{Name: p.Namespace + "/" + p.Name, Why: why, ref: p}
			w.Hook, w.HookErr = HookOf(p)
			out = append(out, w)
		}
	}
	return out, nil
}

// Checkpoint runs a training pod's hook in its container through the API's
// exec, within the hook's timeout.
func (k *Kube) Checkpoint(ctx context.Context, _ *engine.Host, w Workload) (string, error) {
	p, ok := w.ref.(*corev1.Pod)
	if !ok || w.Hook == nil {
		return "", fmt.Errorf("%s has no checkpoint hook", w.Name)
	}
	if k.Config == nil {
		return "", errors.New("checkpoint hooks need the API's exec, which this connection does not offer")
	}
	h := w.Hook
	ctx, cancel := context.WithTimeout(ctx, h.Timeout)
	defer cancel()
	req := k.Client.CoreV1().RESTClient().Post().Resource("pods").Namespace(p.Namespace).Name(p.Name).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: h.Container, Command: h.Argv(), Stdout: true, Stderr: true}, scheme.ParameterCodec)
	ex, err := remotecommand.NewSPDYExecutor(k.Config, "POST", req.URL())
	if err != nil {
		return "", err
	}
	out := &tailBuffer{max: maxHookOutput}
	err = ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: out, Stderr: out})
	if ctx.Err() == context.DeadlineExceeded {
		err = fmt.Errorf("timed out after %s", h.Timeout)
	}
	return out.String(), err
}

// maxHookOutput bounds what a hook's output keeps: its end, which says how
// it finished.
const maxHookOutput = 16 << 10

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu      sync.Mutex
	b       []byte
	max     int
	dropped bool
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - t.max; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
		t.dropped = true
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.dropped {
		return "[...]" + string(t.b)
	}
	return string(t.b)
}

// Says what op does, in the API's terms.
func (k *Kube) Says(op Op, node string) string {
	switch op {
	case OpCordon:
		return "Node " + node + ": unschedulable, annotated " + AnnotationCordoned
	case OpDrain:
		return "evict the pods of " + node + " through their PodDisruptionBudgets (kubectl drain; DaemonSets stay)"
	}
	return "Node " + node + ": schedulable, gpukit's mark removed"
}

// Relabel updates the labels kubernetes/labels derives from the facts
// (driver, CUDA) to the verified GPUs'.
func (k *Kube) Relabel(ctx context.Context, node string, m inventory.Machine, f *facts.Facts) ([]string, func(context.Context) error, error) {
	n, err := k.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return nil, nil, fmt.Errorf("read node %s: %w", node, err)
	}
	want := kube.Want(k.Inventory, m, f)
	changes := kube.Reconcile(n.DeepCopy(), want)
	return changes, func(ctx context.Context) error { return kube.UpdateNode(ctx, k.Client, n, want) }, nil
}

// DrainOptions are kubectl drain's, as the upgrade sets them.
type DrainOptions struct {
	// Force evicts training pods and pods no controller recreates.
	Force bool
	// GracePeriod overrides the pods' own when >= 0.
	GracePeriod time.Duration
	// Timeout bounds the whole drain.
	Timeout time.Duration
	// DeleteEmptyDirData lets pods with emptyDir volumes go (their data
	// is lost).
	DeleteEmptyDirData bool
}

// Drain evicts the node's pods with kubectl's drain: through the eviction
// API, so PodDisruptionBudgets hold (an eviction they refuse is retried
// until Timeout), DaemonSet pods stay, and each pod gets its grace period.
// Training pods are refused here unless Force: they are dealt with before.
func (k *Kube) Drain(ctx context.Context, node string, o DrainOptions, log io.Writer) error {
	d := k.drainer(ctx, o, log)
	list, err := k.evictable(d, node)
	if err != nil {
		return err
	}
	if w := list.Warnings(); w != "" {
		fmt.Fprintf(log, "warning: %s\n", w)
	}
	if err := d.DeleteOrEvictPods(list.Pods()); err != nil {
		return fmt.Errorf("drain %s: %w", node, err)
	}
	return nil
}

// Evictable are the pods Drain would evict from the node (namespace/name),
// chosen by the same filters: a dry-run's plan.
func (k *Kube) Evictable(ctx context.Context, node string, o DrainOptions) ([]string, error) {
	list, err := k.evictable(k.drainer(ctx, o, io.Discard), node)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, p := range list.Pods() {
		out = append(out, p.Namespace+"/"+p.Name)
	}
	return out, nil
}

func (k *Kube) evictable(d *drain.Helper, node string) (*drain.PodDeleteList, error) {
	list, errs := d.GetPodsForDeletion(node)
	if len(errs) > 0 {
		return nil, fmt.Errorf("drain %s: %w", node, errors.Join(errs...))
	}
	return list, nil
}

// drainer is kubectl's drain helper as the upgrade sets it.
func (k *Kube) drainer(ctx context.Context, o DrainOptions, log io.Writer) *drain.Helper {
	grace := -1
	if o.GracePeriod >= 0 {
		grace = int(o.GracePeriod / time.Second)
	}
	d := &drain.Helper{
		Ctx: ctx, Client: k.Client, Force: o.Force, GracePeriodSeconds: grace, IgnoreAllDaemonSets: true,
		Timeout: o.Timeout, DeleteEmptyDirData: o.DeleteEmptyDirData, Out: log, ErrOut: log,
		EvictErrorRetryDelay: k.poll(),
		OnPodDeletionOrEvictionFinished: func(p *corev1.Pod, eviction bool, err error) {
			switch {
			case err != nil:
				fmt.Fprintf(log, "pod %s/%s: %v\n", p.Namespace, p.Name, err)
			case eviction:
				fmt.Fprintf(log, "pod %s/%s evicted\n", p.Namespace, p.Name)
			default:
				fmt.Fprintf(log, "pod %s/%s deleted\n", p.Namespace, p.Name)
			}
		},
	}
	if !o.Force {
		d.AdditionalFilters = append(d.AdditionalFilters, func(p corev1.Pod) drain.PodDeleteStatus {
			if ok, why := Training(&p); ok {
				return drain.MakePodDeleteStatusWithError("training (" + why + "): not evicted without --force")
			}
			return drain.MakePodDeleteStatusOkay()
		})
	}
	return d
}

// WaitGPUs waits until the node is Ready and advertises want GPUs as
// allocatable (the device plugin registered with the new driver).
func (k *Kube) WaitGPUs(ctx context.Context, node string, want int64, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	last := ""
	for {
		n, err := k.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		switch {
		case err != nil:
			last = err.Error()
		case !ready(n):
			last = "the node is not Ready"
		default:
			q := n.Status.Allocatable[kube.GPUResource]
			if q.Value() >= want {
				return nil
			}
			last = fmt.Sprintf("%d of %d GPUs allocatable", q.Value(), want)
		}
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf("%s: not back after %s: %s", node, timeout, last)
			}
			return ctx.Err()
		case <-time.After(k.poll()):
		}
	}
}

// WaitKubelet waits until the node's kubelet reports version: the new
// kubelet has posted its status (one node read per poll).
func (k *Kube) WaitKubelet(ctx context.Context, node, version string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	last := ""
	for {
		n, err := k.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		switch {
		case err != nil:
			last = err.Error()
		case n.Status.NodeInfo.KubeletVersion == version:
			return nil
		default:
			last = "its kubelet reports " + n.Status.NodeInfo.KubeletVersion
		}
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf("%s: no kubelet %s after %s: %s", node, version, timeout, last)
			}
			return ctx.Err()
		case <-time.After(k.poll()):
		}
	}
}

// RestartDevicePlugin deletes the NVIDIA device plugin's pod on the node,
// so that its DaemonSet starts one that loads the new driver's libraries.
func (k *Kube) RestartDevicePlugin(ctx context.Context, node string) (int, error) {
	pods, err := k.PodsOn(ctx, node)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, p := range pods {
		if !devicePlugin(&p) {
			continue
		}
		err := k.Client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return n, fmt.Errorf("restart %s/%s: %w", p.Namespace, p.Name, err)
		}
		n++
	}
	return n, nil
}

func devicePlugin(p *corev1.Pod) bool {
	for _, k := range []string{"app.kubernetes.io/name", "app", "name"} {
		if v := p.Labels[k]; strings.Contains(v, "nvidia-device-plugin") {
			return true
		}
	}
	return false
}

func ready(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
