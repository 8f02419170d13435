package kubeadm_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/gpukit/gpukit/pkg/bootstrap/kubeadm"
	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/engine/enginetest"
	"github.com/gpukit/gpukit/pkg/event"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/test/cluster"
	"github.com/gpukit/gpukit/test/fixtures"
)

func addonsRun(t *testing.T, inv *inventory.Inventory, c *cluster.Cluster, server string, dryRun bool) (*engine.Summary, *enginetest.Recorder) {
	t.Helper()
	return apiRun(t, inv, c, server, dryRun, func(l *kubeadm.Layer) []engine.Phase { return []engine.Phase{l.Labels(), l.CNI(), l.GPU()} })
}

// kubernetes/cni and kubernetes/gpu against a real API server with kwok
// nodes, the charts taken from a local directory as at an air-gapped site
// (the real chart archives of the fixtures cache): flannel, and
// NVIDIA's device plugin with GPU feature discovery and node feature
// discovery, installed by the Helm SDK and waited for until their pods run
// (kwok runs them: no image is pulled); RuntimeClass nvidia; the plan
// installs nothing; a second run changes nothing.
func TestAddonsOnARealAPIServer(t *testing.T) {
	cluster.Require(t)
	charts := fixtures.Dir(t, "charts")
	t.Parallel()
	c := cluster.Start(t, cluster.Options{})
	for _, n := range []cluster.GPUNode{{Name: "cp-1"}, {Name: "gpu-1", GPUs: 8}, {Name: "gpu-2", GPUs: 4, Product: "NVIDIA-L40S", MemoryMiB: 46068}} {
		c.AddNode(t, n)
	}
	server, host := apiServer(t, c)
	hosts := `
    - {name: cp-1, address: 10.0.0.1, roles: [control-plane]}
    - {name: gpu-1, address: 10.0.0.11, roles: [worker]}
    - {name: gpu-2, address: 10.0.0.12, roles: [worker]}`
	spec := "  kubernetes: {controlPlaneEndpoint: \"" + host + "\", containerd: {nvidiaRuntime: runtimeClass}}\n" +
		"  network: {podCIDR: 10.200.0.0/16}\n  mirrors: {charts: \"" + charts + "\"}\n"
	inv := kubeInventory(t, spec, hosts)

	sum, rec := addonsRun(t, inv, c, server, true)
	var planned []string
	for _, e := range rec.OfType(event.Planned) {
		planned = append(planned, e.Phase+": "+e.Step)
	}
	want := []string{"kubernetes/labels: update 3 node(s): labels, taints", "kubernetes/cni: install flannel v0.28.9",
		"kubernetes/gpu: create RuntimeClass nvidia", "kubernetes/gpu: install nvidia-device-plugin 0.20.0"}
	if sum.HostCounts().Failed != 0 || strings.Join(planned, "|") != strings.Join(want, "|") {
		t.Fatalf("plan: %+v\n%q\nwant %q", sum.HostCounts(), planned, want)
	}
	if out, _ := c.TryKubectl("get", "namespace", "kube-flannel"); strings.Contains(out, "Active") {
		t.Fatal("the plan created kube-flannel")
	}

	sum, _ = addonsRun(t, inv, c, server, false)
	if hc := sum.HostCounts(); hc.Failed != 0 || hc.Changed != 1 {
		t.Fatalf("addons: %+v %v", hc, sum)
	}
	// flannel: its DaemonSet with the pod network of the inventory, in a
	// privileged namespace; the images keep their public names (containerd
	// takes them from spec.mirrors.registry).
	if got := c.Kubectl(t, "get", "namespace", "kube-flannel", "-o", "jsonpath={.metadata.labels.pod-security\\.kubernetes\\.io/enforce}"); got != "privileged" {
		t.Errorf("kube-flannel's pod security: %q", got)
	}
	if got := c.Kubectl(t, "-n", "kube-flannel", "get", "configmap", "kube-flannel-cfg", "-o", "jsonpath={.data.net-conf\\.json}"); !strings.Contains(got, `"Network": "10.200.0.0/16"`) {
		t.Errorf("flannel's net-conf.json:\n%s", got)
	}
	// Helm waited for each DaemonSet but one pod (its maxUnavailable); kwok
	// runs the last a moment later.
	var ds string
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(time.Second) {
		ds = c.Kubectl(t, "get", "daemonsets", "-A", "-o", `jsonpath={range .items[*]}{.metadata.namespace}/{.metadata.name} {.status.numberReady}/{.status.desiredNumberScheduled} {.spec.template.spec.runtimeClassName} {.spec.template.spec.containers[0].image}{"\n"}{end}`)
		if strings.Count(ds, " 2/2 ") == 3 {
			break
		}
	}
	for _, want := range []string{
		"kube-flannel/kube-flannel-ds 3/3  ghcr.io/flannel-io/flannel:v0.28.9",
		"nvidia-device-plugin/nvidia-device-plugin 2/2 nvidia nvcr.io/nvidia/k8s-device-plugin:v0.20.0",
		"nvidia-device-plugin/nvidia-device-plugin-gpu-feature-discovery 2/2 nvidia nvcr.io/nvidia/k8s-device-plugin:v0.20.0",
		// the workers only: the control plane keeps its taint
		"nvidia-device-plugin/nvidia-device-plugin-node-feature-discovery-worker 2/2  registry.k8s.io/nfd/node-feature-discovery:v0.19.0",
	} {
		if !strings.Contains(ds+"\n", want+"\n") {
			t.Errorf("daemonsets:\n%s\nwant a line %q", ds, want)
		}
	}
	if got := c.Kubectl(t, "get", "runtimeclass", "nvidia", "-o", "jsonpath={.handler}"); got != "nvidia" {
		t.Errorf("RuntimeClass nvidia: handler %q", got)
	}
	var releases struct {
		Items []struct {
			Metadata struct{ Namespace, Name string }
		}
	}
	if err := json.Unmarshal([]byte(c.Kubectl(t, "get", "secrets", "-A", "-l", "owner=helm", "-o", "json")), &releases); err != nil || len(releases.Items) != 2 {
		t.Errorf("helm release records: %+v %v", releases, err)
	}

	sum, rec = addonsRun(t, inv, c, server, false)
	if hc := sum.HostCounts(); hc.Failed != 0 || hc.Changed != 0 || len(rec.OfType(event.Planned)) != 0 {
		t.Errorf("second run: %+v", hc)
	}
	var skipped []string
	for _, e := range rec.Events() {
		if e.Type == event.HostSkipped && (e.Phase == kubeadm.PhaseCNI || e.Phase == kubeadm.PhaseGPU) {
			skipped = append(skipped, e.Message)
		}
	}
	if len(skipped) != 2 {
		t.Errorf("second run skipped %q", skipped)
	}
}
