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

	"github.com/gpukit/gpukit/manifests"
	"github.com/gpukit/gpukit/pkg/charts"
	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/kube"
)

// Phase names of the add-ons installed through the API.
const (
	PhaseCNI = "kubernetes/cni"
	PhaseGPU = "kubernetes/gpu"
)

// The charts gpukit installs, as the bill of materials pins them: each at
// the version its settings below were written for.
var (
	FlannelChart = charts.Pinned("flannel")
	CalicoChart  = charts.Pinned("tigera-operator")
	CiliumChart  = charts.Pinned("cilium")
	// DevicePluginChart brings GPU feature discovery and node feature
	// discovery (its nfd subchart) along.
	DevicePluginChart = charts.Pinned("nvidia-device-plugin")
)

// addonTimeout bounds the wait for an add-on's workloads to be ready.
const addonTimeout = 5 * time.Minute

// privileged is the pod security level node agents need.
var privileged = map[string]string{"pod-security.kubernetes.io/enforce": "privileged"}

// CNIRelease is the pod network's release (false: spec.network.cni none).
func CNIRelease(inv *inventory.Inventory) (charts.Release, bool) {
	n := inv.Cluster.Spec.Network
	v4, v6 := splitFamilies(n.PodCIDR)
	nodeIPs := nodeAddresses(inv)
	switch n.CNI {
	case inventory.CNIFlannel:
		values := map[string]any{"podCidr": v4, "podCidrv6": v6}
		if len(nodeIPs) > 0 {
			// flannel takes the default route's interface unless told; its
			// --iface takes an IP and may repeat: each node finds its own.
			args := append([]any{}, flannelArgs...)
			for _, ip := range nodeIPs {
				args = append(args, "--iface="+ip)
			}
			values["flannel"] = map[string]any{"args": args}
		}
		return charts.Release{Name: "flannel", Namespace: "kube-flannel", Chart: FlannelChart, NamespaceLabels: privileged,
			Values: values, Wait: true, Timeout: addonTimeout}, true
	case inventory.CNICalico:
		pools := []any{}
		for _, c := range []string{v4, v6} {
			if c != "" {
				pools = append(pools, map[string]any{"cidr": c})
			}
		}
		network := map[string]any{"ipPools": pools}
		if len(nodeIPs) > 0 {
			// calico autodetects the first interface's address unless told
			// to take the kubelet's --node-ip (the node's InternalIP)
			network["nodeAddressAutodetectionV4"] = map[string]any{"kubernetes": "NodeInternalIP"}
			network["nodeAddressAutodetectionV6"] = map[string]any{"kubernetes": "NodeInternalIP"}
		}
		return charts.Release{Name: "calico", Namespace: "tigera-operator", Chart: CalicoChart, NamespaceLabels: privileged,
			Values: map[string]any{"installation": map[string]any{"calicoNetwork": network}}, Wait: true, Timeout: addonTimeout}, true
	case inventory.CNICilium:
		// Its IPAM takes kubeadm's per-node pod ranges (values/cilium.yaml).
		return charts.Release{Name: "cilium", Namespace: "kube-system", Chart: CiliumChart,
			Values: manifests.Values(CiliumChart.Name), Wait: true, Timeout: addonTimeout}, true
	}
	return charts.Release{}, false
}

// flannelArgs are the flannel chart's own flannel.args, kept when gpukit
// adds to them (Helm replaces a list; TestFlannelArgsAreTheChartsOwn).
var flannelArgs = []any{"--ip-masq", "--kube-subnet-mgr"}

// nodeAddresses are the hosts' node addresses, in inventory order, when any
// host's differs from its SSH address (multi-NIC hosts); else none: the
// pod network's own choice (the default route's interface) is then right.
func nodeAddresses(inv *inventory.Inventory) []string {
	var out []string
	apart := false
	for _, m := range inv.Machines {
		out = append(out, m.NodeIP())
		apart = apart || m.NodeAddress != "" && m.NodeAddress != m.Address
	}
	if !apart {
		return nil
	}
	return out
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
	values := manifests.Values(DevicePluginChart.Name)
	if k.Containerd.NVIDIARuntime == inventory.NVIDIARuntimeClass {
		values["runtimeClassName"] = kube.NVIDIARuntimeName
	}
	// The MIG strategy and GPU sharing (spec.kubernetes.gpuSharing): one
	// configuration per node group, chosen by the node's
	// nvidia.com/device-plugin.config label (the chart's config manager
	// follows it), checked at load with the plugin's own config package.
	if files, def, err := inv.Cluster.DevicePluginConfigs(); err == nil && files != nil {
		m := map[string]any{}
		for name, f := range files {
			m[name] = f
		}
		values["config"] = map[string]any{"map": m, "default": def}
	}
	return charts.Release{Name: "nvidia-device-plugin", Namespace: "nvidia-device-plugin", Chart: DevicePluginChart, NamespaceLabels: privileged,
		Values: values, Wait: true, Timeout: addonTimeout}, true
}

// CNI installs the pod network; GPU the device plugin and RuntimeClass
// nvidia. Both from the first control plane, through the API.
func (l *Layer) CNI() engine.Phase {
	p := l.addon(PhaseCNI, "Install the pod network (CNI)", CNIRelease)
	// Helm's wait lets a DaemonSet be one pod short (its maxUnavailable):
	// the pod network is up once every node says it is Ready.
	p.After = l.waitReady
	return p
}

func (l *Layer) GPU() engine.Phase {
	p := l.addon(PhaseGPU, "Install the NVIDIA device plugin, GPU and node feature discovery, RuntimeClass nvidia", GPURelease)
	p.Pending, p.Before = l.runtimeClassPending, l.ensureRuntimeClass
	return p
}

// addon is the phase of one release from the first control plane, none
// when the inventory turns it off.
func (l *Layer) addon(name, title string, release func(*inventory.Inventory) (charts.Release, bool)) *charts.Phase {
	r, ok := release(l.inv)
	return &charts.Phase{ID: name, Description: title, Release: r, Source: charts.Source(l.inv.Cluster.Spec.Mirrors.Charts), Access: charts.AccessOf(l.inv),
		API: l,
		Target: func(hosts []*engine.Host) []*engine.Host {
			if !ok {
				return nil
			}
			return firstControlPlaneIn(l.inv, hosts)
		}}
}

// waitReady waits for every node to be Ready.
func (l *Layer) waitReady(ctx context.Context, h *engine.Host) error {
	cs, err := l.client(ctx, h)
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
			h.Logf("%s: %d node(s) Ready", PhaseCNI, len(list.Items))
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

func (l *Layer) runtimeClassPending(ctx context.Context, h *engine.Host) (string, error) {
	cs, err := l.client(ctx, h)
	if err != nil || cs == nil {
		return "the cluster does not exist yet", err
	}
	rc, err := cs.NodeV1().RuntimeClasses().Get(ctx, kube.NVIDIARuntimeName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return "RuntimeClass " + kube.NVIDIARuntimeName + " is missing", nil
	case err != nil:
		return "", err
	case rc.Handler != kube.NVIDIARuntimeName:
		return "RuntimeClass " + kube.NVIDIARuntimeName + " runs handler " + rc.Handler, nil
	}
	return "", nil
}

// ensureRuntimeClass makes RuntimeClass nvidia, the containerd runtime
// gpukit configured on GPU hosts, for pods that ask for it by name.
func (l *Layer) ensureRuntimeClass(ctx context.Context, h *engine.Host) error {
	why, err := l.runtimeClassPending(ctx, h)
	if err != nil || why == "" {
		return err
	}
	return h.WriteAPI(ctx, "create RuntimeClass "+kube.NVIDIARuntimeName, why, func(ctx context.Context) error {
		cs, err := l.client(ctx, h)
		if err != nil {
			return err
		}
		rcs := cs.NodeV1().RuntimeClasses()
		if err := rcs.Delete(ctx, kube.NVIDIARuntimeName, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		_, err = rcs.Create(ctx, &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: kube.NVIDIARuntimeName}, Handler: kube.NVIDIARuntimeName}, metav1.CreateOptions{FieldManager: "gpukit"})
		return err
	})
}
