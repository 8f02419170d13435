package kubeadm_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpukit/gpukit/pkg/bootstrap/kubeadm"
	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/engine/enginetest"
	"github.com/gpukit/gpukit/pkg/event"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/kube"
	"github.com/gpukit/gpukit/pkg/preflight"
	"github.com/gpukit/gpukit/pkg/ssh"
	"github.com/gpukit/gpukit/test/cluster"
	"github.com/gpukit/gpukit/test/gpusim/scriptsim"
)

// apiHandler answers what kubernetes/kubeconfig and kubernetes/labels run
// over SSH for a cluster that exists: the hosts' facts, the control plane's
// state and its admin kubeconfig, which is the real control plane's.
func apiHandler(c *cluster.Cluster, server string) enginetest.Handler {
	fake := newFakeKube()
	fake.host("cp-1").apiserver = true
	fake.host("cp-1").server = server
	h100 := scriptsim.Installed("590.48.01", 8) // the GPU simulator's default capture
	l40s := scriptsim.Installed("595.58.03", 4)
	l40s.Capture = "l40s__drv595.80"
	fake.machines["gpu-1"], fake.machines["gpu-2"] = &h100, &l40s
	return func(ctx context.Context, e *enginetest.Executor, cmd ssh.Command) (ssh.Result, error) {
		switch cmd.Name {
		case "read the admin kubeconfig":
			b, err := os.ReadFile(c.Kubeconfig)
			return ssh.Result{Stdout: b}, err
		}
		return fake.handle(ctx, e, cmd)
	}
}

// apiServer is the control plane's API as its kubeconfig names it: the URL
// and host:port (the inventory's controlPlaneEndpoint).
func apiServer(t *testing.T, c *cluster.Cluster) (server, host string) {
	t.Helper()
	kc, err := os.ReadFile(c.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(kc), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "server: "); ok {
			server = v
		}
	}
	u, err := url.Parse(server)
	if err != nil || u.Host == "" {
		t.Fatalf("server %q in %s: %v", server, c.Kubeconfig, err)
	}
	return server, u.Host
}

// apiRun runs the facts, the kubeconfig phase and the phases of layer on
// inv's hosts (recording executors) against the real control plane c.
func apiRun(t *testing.T, inv *inventory.Inventory, c *cluster.Cluster, server string, dryRun bool, layer func(*kubeadm.Layer) []engine.Phase) (*engine.Summary, *enginetest.Recorder) {
	t.Helper()
	l := kubeadm.New(inv)
	fleet := &enginetest.Fleet{Handler: apiHandler(c, server)}
	rec := &enginetest.Recorder{}
	phases := append([]engine.Phase{preflight.New(inv).Facts(), l.FetchKubeconfig()}, layer(l)...)
	r := &engine.Runner{Name: "test", Phases: phases, Sink: rec, DryRun: dryRun}
	sum, err := r.Run(context.Background(), inv.Machines, fleet.Dial)
	if err != nil {
		t.Fatal(err)
	}
	return sum, rec
}

func labelsRun(t *testing.T, inv *inventory.Inventory, c *cluster.Cluster, server string, dryRun bool) (*engine.Summary, *enginetest.Recorder) {
	t.Helper()
	return apiRun(t, inv, c, server, dryRun, func(l *kubeadm.Layer) []engine.Phase { return []engine.Phase{l.Labels()} })
}

// kubernetes/labels against a real API server with kwok nodes: the GPU
// facts and the inventory's labels and taints are put on the nodes, the
// plan changes nothing, a second run changes nothing, a taint dropped from
// the inventory comes off while another writer's stays; and the scheduler
// places GPU pods by gpukit's labels (over-capacity pods stay Pending).
func TestLabelsOnARealAPIServer(t *testing.T) {
	cluster.Require(t)
	t.Parallel()
	c := cluster.Start(t, cluster.Options{})
	for _, n := range []cluster.GPUNode{{Name: "cp-1"}, {Name: "gpu-1", GPUs: 8}, {Name: "gpu-2", GPUs: 4, Product: "NVIDIA-L40S", MemoryMiB: 46068}} {
		c.AddNode(t, n)
	}
	server, host := apiServer(t, c)
	hosts := `
    - {name: cp-1, address: 10.0.0.1, roles: [control-plane]}
    - {name: gpu-1, address: 10.0.0.11, roles: [worker], labels: {team: vision}, taints: ["dedicated=ml:NoSchedule"]}
    - {name: gpu-2, address: 10.0.0.12, roles: [worker]}`
	spec := "  kubernetes: {controlPlaneEndpoint: \"" + host + "\"}\n"
	inv := kubeInventory(t, spec, hosts)

	sum, rec := labelsRun(t, inv, c, server, true)
	planned := rec.OfType(event.Planned)
	if sum.HostCounts().Failed != 0 || len(planned) != 1 || !strings.Contains(planned[0].Message, "gpu-1: label gpukit.dev/gpu.count=8") {
		t.Fatalf("plan: %+v %+v", sum.HostCounts(), planned)
	}
	if got := c.Kubectl(t, "get", "node", "gpu-1", "-o", "jsonpath={.metadata.labels.gpukit\\.dev/gpu\\.count}"); got != "" {
		t.Fatalf("the plan labelled gpu-1: %q", got)
	}

	sum, _ = labelsRun(t, inv, c, server, false)
	if hc := sum.HostCounts(); hc.Failed != 0 || hc.Changed != 1 {
		t.Fatalf("labels: %+v", hc)
	}
	labels := func(node string) string {
		var n struct {
			Metadata struct{ Labels map[string]string }
			Spec     struct {
				Taints []struct{ Key, Value, Effect string }
			}
		}
		if err := json.Unmarshal([]byte(c.Kubectl(t, "get", "node", node, "-o", "json")), &n); err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for _, k := range slices.Sorted(maps.Keys(n.Metadata.Labels)) {
			if k == "team" || strings.HasPrefix(k, kube.LabelPrefix) {
				fmt.Fprintf(&b, "%s=%s ", k, n.Metadata.Labels[k])
			}
		}
		b.WriteString("|")
		for _, t := range n.Spec.Taints {
			fmt.Fprintf(&b, "%s=%s:%s ", t.Key, t.Value, t.Effect)
		}
		return b.String()
	}
	for node, want := range map[string]string{
		"gpu-1": "gpukit.dev/gpu.count=8 gpukit.dev/gpu.memory-mib=81559 gpukit.dev/gpu.product=NVIDIA-H100-80GB-HBM3 gpukit.dev/nvidia.cuda=13.1 gpukit.dev/nvidia.driver=590.48.01 team=vision |dedicated=ml:NoSchedule ",
		"gpu-2": "gpukit.dev/gpu.count=4 gpukit.dev/gpu.memory-mib=46068 gpukit.dev/gpu.product=NVIDIA-L40S gpukit.dev/nvidia.cuda=13.2 gpukit.dev/nvidia.driver=595.58.03 |",
	} {
		if got := labels(node); got != want {
			t.Errorf("%s: %q\nwant %q", node, got, want)
		}
	}
	if got := labels("cp-1"); !strings.HasPrefix(got, "|node-role.kubernetes.io/control-plane=:NoSchedule") {
		t.Errorf("cp-1 (a control plane of a cluster with workers): %q", got)
	}

	// The scheduler places GPU pods by gpukit's labels.
	c.Apply(t, gpuPod("h100-8", "NVIDIA-H100-80GB-HBM3", 8, true)+"---\n"+gpuPod("l40s-2", "NVIDIA-L40S", 2, false)+
		"---\n"+gpuPod("h100-9", "NVIDIA-H100-80GB-HBM3", 9, true)+"---\n"+gpuPod("untolerated", "NVIDIA-H100-80GB-HBM3", 1, false))
	deadline := time.Now().Add(60 * time.Second)
	var placed string
	for time.Now().Before(deadline) {
		placed = c.Kubectl(t, "get", "pods", "-o", `jsonpath={range .items[*]}{.metadata.name}={.spec.nodeName}/{.status.phase} {end}`)
		if strings.Contains(placed, "h100-8=gpu-1/Running") && strings.Contains(placed, "l40s-2=gpu-2/Running") {
			break
		}
		time.Sleep(time.Second)
	}
	for _, want := range []string{"h100-8=gpu-1/Running", "l40s-2=gpu-2/Running", "h100-9=/Pending", "untolerated=/Pending"} {
		if !strings.Contains(placed, want) {
			t.Errorf("pods: %q, want %s", placed, want)
		}
	}

	sum, rec = labelsRun(t, inv, c, server, false)
	if hc := sum.HostCounts(); hc.Failed != 0 || hc.Changed != 0 || len(rec.OfType(event.StepStart)) == 0 {
		t.Errorf("second run: %+v", hc)
	}

	// A taint dropped from the inventory comes off; another writer's stays.
	c.Kubectl(t, "taint", "node", "gpu-1", "maintenance=disk:NoExecute")
	inv = kubeInventory(t, spec, strings.Replace(hosts, `, taints: ["dedicated=ml:NoSchedule"]`, "", 1))
	if sum, _ = labelsRun(t, inv, c, server, false); sum.HostCounts().Changed != 1 {
		t.Errorf("after the taint left the inventory: %+v", sum.HostCounts())
	}
	if got := labels("gpu-1"); !strings.HasSuffix(got, "|maintenance=disk:NoExecute ") {
		t.Errorf("gpu-1: %q (want only the other writer's taint)", got)
	}
}

func gpuPod(name, product string, gpus int, tolerate bool) string {
	s := fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s, namespace: default}
spec:
  nodeSelector: {gpukit.dev/gpu.product: %s}
  containers:
  - name: c
    image: registry.example/cuda:13
    resources: {limits: {nvidia.com/gpu: %d}}
`, name, product, gpus)
	if tolerate {
		s += "  tolerations: [{key: dedicated, value: ml, effect: NoSchedule}]\n"
	}
	return s
}
