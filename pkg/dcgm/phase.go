package dcgm

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/kube"
	"github.com/gpukit/gpukit/pkg/safe"
)

// PhaseMetrics reads the exporters (gpukit status).
const PhaseMetrics = "status/gpu-metrics"

// Selectors find dcgm-exporter's pods: its Helm chart's (gpukit's
// monitoring) and the GPU Operator's.
var Selectors = []string{"app.kubernetes.io/name=dcgm-exporter", "app=nvidia-dcgm-exporter"}

// Source is a DaemonSet whose pods are trusted to report a node's GPUs. A
// label is no proof: a tenant may run a pod labelled as an exporter in its
// own namespace and make a healthy GPU look broken ("replace it"), so only
// the pods a trusted DaemonSet owns in its namespace are read.
type Source struct {
	Namespace, DaemonSet string
}

// OperatorSources are the GPU Operator's exporter, in the namespaces its
// install guides use (Kubernetes, OpenShift).
var OperatorSources = []Source{
	{Namespace: "gpu-operator", DaemonSet: "nvidia-dcgm-exporter"},
	{Namespace: "nvidia-gpu-operator", DaemonSet: "nvidia-dcgm-exporter"},
}

// trusted says whether a source owns pod; why not, when not.
func trusted(sources []Source, pod *corev1.Pod) (bool, string) {
	owner := metav1.GetControllerOf(pod)
	if owner == nil || owner.Kind != "DaemonSet" {
		return false, "no DaemonSet owns it"
	}
	if slices.Contains(sources, Source{Namespace: pod.Namespace, DaemonSet: owner.Name}) {
		return true, ""
	}
	return false, fmt.Sprintf("DaemonSet %s/%s is not a trusted exporter", pod.Namespace, owner.Name)
}

// DefaultPort is the exporter's, when its pod names none "metrics".
const DefaultPort = 9400

// maxScrape bounds an exporter's answer: eight GPUs with every field and
// their MIG instances are well under 1 MiB.
const maxScrape = 8 << 20

// Metrics is the phase that reads every running dcgm-exporter's metrics
// through the API server's pod proxy, as Prometheus scrapes them: no
// exporter, no reading (the monitoring stack is optional).
type Metrics struct {
	api     kube.API
	target  func([]*engine.Host) []*engine.Host
	sources []Source

	mu     sync.Mutex
	byNode map[string][]GPU
	errs   []string
}

// NewMetrics returns the phase, which reaches the API from the host
// target picks and reads the exporters of sources.
func NewMetrics(api kube.API, target func([]*engine.Host) []*engine.Host, sources []Source) *Metrics {
	return &Metrics{api: api, target: target, sources: sources, byNode: map[string][]GPU{}}
}

func (*Metrics) Name() string  { return PhaseMetrics }
func (*Metrics) Title() string { return "Read the DCGM exporters' GPU metrics" }

func (p *Metrics) Targets(hosts []*engine.Host) []*engine.Host { return p.target(hosts) }

// scrapeTimeout bounds one exporter's answer: a node that does not answer
// is named, the others still read.
const scrapeTimeout = 15 * time.Second

func (p *Metrics) Run(ctx context.Context, h *engine.Host) error {
	c, err := p.api.Client(ctx, h)
	if err != nil {
		return err
	}
	if c == nil {
		return fmt.Errorf("the cluster's API does not answer")
	}
	cs := c.Clientset
	var pods []corev1.Pod
	for _, sel := range Selectors {
		list, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{LabelSelector: sel, FieldSelector: "status.phase=Running"})
		if err != nil {
			return fmt.Errorf("list the DCGM exporters (%s): %w", sel, err)
		}
		for i := range list.Items {
			pod := &list.Items[i]
			if ok, why := trusted(p.sources, pod); !ok {
				h.Logf("%s: %s/%s on %s is not read: %s", PhaseMetrics, pod.Namespace, pod.Name, pod.Spec.NodeName, why)
				continue
			}
			pods = append(pods, *pod)
		}
	}
	if len(pods) == 0 {
		h.Logf("%s: no dcgm-exporter runs (%v): nvidia-smi's view only", PhaseMetrics, Selectors)
		return nil
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i := range pods {
		pod := &pods[i]
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			var gpus []GPU
			err := safe.Call(func() (err error) { gpus, err = scrape(ctx, cs, pod); return err })
			p.mu.Lock()
			defer p.mu.Unlock()
			if err != nil {
				p.errs = append(p.errs, fmt.Sprintf("%s (%s/%s): %v", pod.Spec.NodeName, pod.Namespace, pod.Name, err))
				return
			}
			p.byNode[pod.Spec.NodeName] = append(p.byNode[pod.Spec.NodeName], gpus...)
		}()
	}
	wg.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	h.Logf("%s: %d exporters read, %d did not answer", PhaseMetrics, len(pods)-len(p.errs), len(p.errs))
	for _, e := range p.errs {
		h.Logf("%s: %s", PhaseMetrics, e)
	}
	return nil
}

// scrape reads one exporter through the API server's pod proxy.
func scrape(ctx context.Context, cs kubernetes.Interface, pod *corev1.Pod) ([]GPU, error) {
	ctx, cancel := context.WithTimeout(ctx, scrapeTimeout)
	defer cancel()
	rc, err := cs.CoreV1().Pods(pod.Namespace).ProxyGet("http", pod.Name, strconv.Itoa(metricsPort(pod)), "metrics", nil).Stream(ctx)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, maxScrape+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxScrape {
		return nil, fmt.Errorf("its answer is over %d MiB: not read", maxScrape>>20)
	}
	return Parse(bytes.NewReader(b))
}

// metricsPort is the exporter container's port named metrics.
func metricsPort(pod *corev1.Pod) int {
	for _, c := range pod.Spec.Containers {
		if i := slices.IndexFunc(c.Ports, func(p corev1.ContainerPort) bool { return p.Name == "metrics" }); i >= 0 {
			return int(c.Ports[i].ContainerPort)
		}
	}
	return DefaultPort
}

// Node is what the exporter on the node reported; nil when none did.
func (p *Metrics) Node(name string) []GPU {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.byNode[name]
}

// Unanswered names the exporters that did not answer (node (pod): why).
func (p *Metrics) Unanswered() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.errs)
}
