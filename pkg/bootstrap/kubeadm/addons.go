package kubeadm

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpukit/gpukit/pkg/charts"
	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/inventory"
)

// Phase names of the add-ons installed through the API.
const (
	PhaseCNI = "kubernetes/cni"
	PhaseGPU = "kubernetes/gpu"
)

// The charts gpukit installs, pinned: each is the version its settings
// below were written for.
var (
	FlannelChart = charts.Chart{Name: "flannel", Version: "v0.28.9", Repo: "https://flannel-io.github.io/flannel/"}
	CalicoChart  = charts.Chart{Name: "tigera-operator", Version: "v3.32.0", Repo: "https://docs.tigera.io/calico/charts"}
	CiliumChart  = charts.Chart{Name: "cilium", Version: "1.18.0", Repo: "https://helm.cilium.io/"}
	// DevicePluginChart brings GPU feature discovery and node feature
	// discovery (its nfd subchart) along.
	DevicePluginChart = charts.Chart{Name: "nvidia-device-plugin", Version: "0.20.0", Repo: "https://nvidia.github.io/k8s-device-plugin"}
)

// addonTimeout bounds the wait for an add-on's workloads to be ready.
const addonTimeout = 5 * time.Minute

// privileged is the pod security level node agents need.
var privileged = map[string]string{"pod-security.kubernetes.io/enforce": "privileged"}

// CNIRelease is the pod network's release (false: spec.network.cni none).
func CNIRelease(inv *inventory.Inventory) (charts.Release, bool) {
	n := inv.Cluster.Spec.Network
	v4, v6 := splitFamilies(n.PodCIDR)
	switch n.CNI {
	case inventory.CNIFlannel:
		return charts.Release{Name: "flannel", Namespace: "kube-flannel", Chart: FlannelChart, NamespaceLabels: privileged,
			Values: map[string]any{"podCidr": v4, "podCidrv6": v6}, Wait: true, Timeout: addonTimeout}, true
	case inventory.CNICalico:
		pools := []any{}
		for _, c := range []string{v4, v6} {
			if c != "" {
				pools = append(pools, map[string]any{"cidr": c})
			}
		}
		return charts.Release{Name: "calico", Namespace: "tigera-operator", Chart: CalicoChart, NamespaceLabels: privileged,
			Values: map[string]any{"installation": map[string]any{"calicoNetwork": map[string]any{"ipPools": pools}}}, Wait: true, Timeout: addonTimeout}, true
	case inventory.CNICilium:
		// kubeadm allocates each node its pod range (podSubnet): Cilium's
		// kubernetes IPAM takes them.
		return charts.Release{Name: "cilium", Namespace: "kube-system", Chart: CiliumChart,
			Values: map[string]any{"ipam": map[string]any{"mode": "kubernetes"}}, Wait: true, Timeout: addonTimeout}, true
	}
	return charts.Release{}, false
}

// splitFamilies reads a CIDR or an IPv4,IPv6 pair.
func splitFamilies(cidrs string) (v4, v6 string) {
	for _, c := range strings.Split(cidrs, ",") {
		c = strings.TrimSpace(c)
		if strings.Contains(c, ":") {
			v6 = c
		} else if c != "" {
			v4 = c
		}
	}
	return v4, v6
}

// GPURelease is NVIDIA's device plugin with GPU feature discovery and node
// feature discovery (false: spec.kubernetes.devicePlugin none). Its pods
// run on nodes labelled nvidia.com/gpu.present (kubernetes/labels puts it
// on every GPU host) or found by node feature discovery; through RuntimeClass
// nvidia where the NVIDIA runtime is not containerd's default.
func GPURelease(inv *inventory.Inventory) (charts.Release, bool) {
	k := inv.Cluster.Spec.Kubernetes
	if k.DevicePlugin == inventory.DevicePluginNone {
		return charts.Release{}, false
	}
	values := map[string]any{"gfd": map[string]any{"enabled": true}, "nfd": map[string]any{"enabled": true}}
	if k.Containerd.NVIDIARuntime == inventory.NVIDIARuntimeClass {
		values["runtimeClassName"] = NVIDIARuntimeName
	}
	return charts.Release{Name: "nvidia-device-plugin", Namespace: "nvidia-device-plugin", Chart: DevicePluginChart, NamespaceLabels: privileged,
		Values: values, Wait: true, Timeout: addonTimeout}, true
}

// CNI installs the pod network; GPU the device plugin and RuntimeClass
// nvidia. Both from the first control plane, through the API.
func (l *Layer) CNI() engine.Phase { return &addonPhase{l: l, name: PhaseCNI, release: CNIRelease} }
func (l *Layer) GPU() engine.Phase {
	return &addonPhase{l: l, name: PhaseGPU, release: GPURelease, runtimeClass: true}
}

type addonPhase struct {
	l            *Layer
	name         string
	release      func(*inventory.Inventory) (charts.Release, bool)
	runtimeClass bool
	// set by ShouldRun
	why string
}

func (p *addonPhase) Name() string { return p.name }
func (p *addonPhase) Title() string {
	if p.runtimeClass {
		return "Install the NVIDIA device plugin, GPU and node feature discovery, RuntimeClass nvidia"
	}
	return "Install the pod network (CNI)"
}

func (p *addonPhase) Targets(hosts []*engine.Host) []*engine.Host {
	if _, ok := p.release(p.l.inv); !ok {
		return nil
	}
	return firstControlPlaneIn(p.l.inv, hosts)
}

func (p *addonPhase) ShouldRun(ctx context.Context, h *engine.Host) (bool, string, error) {
	r, _ := p.release(p.l.inv)
	c, err := p.l.helm(ctx, h)
	if err != nil {
		return false, "", err
	}
	if c == nil {
		p.why = "the cluster does not exist yet"
		return true, "", nil
	}
	p.why, err = c.Pending(ctx, r)
	if err != nil {
		return false, "", err
	}
	if p.why == "" && p.runtimeClass {
		p.why, err = p.runtimeClassPending(ctx, h)
		if err != nil {
			return false, "", err
		}
	}
	if p.why == "" {
		return false, fmt.Sprintf("release %s/%s deployed from chart %s as wanted", r.Namespace, r.Name, r.Chart), nil
	}
	h.Logf("%s: %s", p.name, p.why)
	return true, "", nil
}

func (p *addonPhase) Run(ctx context.Context, h *engine.Host) error {
	r, _ := p.release(p.l.inv)
	src := charts.Source(p.l.inv.Cluster.Spec.Mirrors.Charts)
	// Loading the chart is a read: a plan shows a chart it cannot find.
	ch, err := src.Load(ctx, r.Chart)
	if err != nil {
		return err
	}
	if p.runtimeClass {
		if err := p.ensureRuntimeClass(ctx, h); err != nil {
			return err
		}
	}
	what := fmt.Sprintf("helm install or upgrade %s/%s from chart %s (%s)", r.Namespace, r.Name, r.Chart, p.why)
	err = h.WriteAPI(ctx, "install "+r.Chart.Name+" "+r.Chart.Version, what, func(ctx context.Context) error {
		c, err := p.l.helm(ctx, h)
		if err != nil {
			return err
		}
		return c.Apply(ctx, r, ch)
	})
	if err != nil || p.runtimeClass || h.DryRun() {
		return err
	}
	// Helm's wait lets a DaemonSet be one pod short (its maxUnavailable):
	// the pod network is up once every node says it is Ready.
	return p.waitReady(ctx, h)
}

// waitReady waits for every node to be Ready.
func (p *addonPhase) waitReady(ctx context.Context, h *engine.Host) error {
	cs, err := p.l.client(ctx, h)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(addonTimeout)
	for {
		list, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return fmt.Errorf("list the nodes: %w", err)
		}
		var notReady []string
		for _, n := range list.Items {
			why := "no Ready condition"
			for _, c := range n.Status.Conditions {
				if c.Type == corev1.NodeReady {
					why = string(c.Status)
					if c.Status != corev1.ConditionTrue {
						why = c.Reason + ": " + c.Message
					}
				}
			}
			if why != string(corev1.ConditionTrue) {
				notReady = append(notReady, n.Name+" ("+why+")")
			}
		}
		if len(notReady) == 0 {
			h.Logf("%s: %d node(s) Ready", p.name, len(list.Items))
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("node(s) not Ready %s after the pod network was installed: %s", addonTimeout, strings.Join(notReady, "; "))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(2 * time.Second):
		}
	}
}

func (p *addonPhase) runtimeClassPending(ctx context.Context, h *engine.Host) (string, error) {
	cs, err := p.l.client(ctx, h)
	if err != nil || cs == nil {
		return "the cluster does not exist yet", err
	}
	rc, err := cs.NodeV1().RuntimeClasses().Get(ctx, NVIDIARuntimeName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return "RuntimeClass " + NVIDIARuntimeName + " is missing", nil
	case err != nil:
		return "", err
	case rc.Handler != NVIDIARuntimeName:
		return "RuntimeClass " + NVIDIARuntimeName + " runs handler " + rc.Handler, nil
	}
	return "", nil
}

// ensureRuntimeClass makes RuntimeClass nvidia, the containerd runtime
// gpukit configured on GPU hosts, for pods that ask for it by name.
func (p *addonPhase) ensureRuntimeClass(ctx context.Context, h *engine.Host) error {
	why, err := p.runtimeClassPending(ctx, h)
	if err != nil || why == "" {
		return err
	}
	return h.WriteAPI(ctx, "create RuntimeClass "+NVIDIARuntimeName, why, func(ctx context.Context) error {
		cs, err := p.l.client(ctx, h)
		if err != nil {
			return err
		}
		rcs := cs.NodeV1().RuntimeClasses()
		if err := rcs.Delete(ctx, NVIDIARuntimeName, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		_, err = rcs.Create(ctx, &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: NVIDIARuntimeName}, Handler: NVIDIARuntimeName}, metav1.CreateOptions{FieldManager: "gpukit"})
		return err
	})
}
