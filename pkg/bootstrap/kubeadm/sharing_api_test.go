package kubeadm_test

import (
	"strings"
	"testing"
	"time"

	"github.com/gpukit/gpukit/test/cluster"
	"github.com/gpukit/gpukit/test/fixtures"
)

// GPU sharing from the inventory through NVIDIA's real chart on a real API
// server with kwok GPU nodes: the MIG strategy and a time-slicing group
// (the configuration files written with the device plugin's own types) in
// the chart's ConfigMap, its config manager beside the plugin, and the
// node of the group labelled for it.
func TestGPUSharingOnARealAPIServer(t *testing.T) {
	cluster.Require(t)
	charts := fixtures.Dir(t, "charts")
	t.Parallel()
	c := cluster.Start(t, cluster.Options{})
	for _, n := range []cluster.GPUNode{{Name: "cp-1"}, {Name: "gpu-1", GPUs: 8}, {Name: "gpu-2", GPUs: 8}} {
		c.AddNode(t, n)
	}
	server, host := apiServer(t, c)
	hosts := `
    - {name: cp-1, address: 10.0.0.1, roles: [control-plane]}
    - {name: gpu-1, address: 10.0.0.11, roles: [worker], labels: {nvidia.com/device-plugin.config: notebooks}}
    - {name: gpu-2, address: 10.0.0.12, roles: [worker], mig: all-1g.10gb}`
	spec := "  kubernetes:\n    controlPlaneEndpoint: \"" + host + "\"\n" +
		"    gpuSharing: {configs: {notebooks: {migStrategy: none, timeSlicing: {replicas: 4}}}}\n" +
		"  network: {podCIDR: 10.200.0.0/16}\n  mirrors: {charts: \"" + charts + "\"}\n"
	inv := kubeInventory(t, spec, hosts)
	sum, _ := addonsRun(t, inv, c, server, false)
	if hc := sum.HostCounts(); hc.Failed != 0 || hc.Changed != 1 {
		t.Fatalf("addons: %+v %v", hc, sum)
	}
	cm := c.Kubectl(t, "-n", "nvidia-device-plugin", "get", "configmap", "nvidia-device-plugin-configs", "-o", `jsonpath={.data.default}{"---\n"}{.data.notebooks}`)
	for _, want := range []string{"migStrategy: mixed", "migStrategy: none", "timeSlicing:", "name: nvidia.com/gpu", "replicas: 4"} {
		if !strings.Contains(cm, want) {
			t.Errorf("the chart's ConfigMap lacks %q:\n%s", want, cm)
		}
	}
	ds := c.Kubectl(t, "-n", "nvidia-device-plugin", "get", "daemonset", "nvidia-device-plugin", "-o",
		`jsonpath={range .spec.template.spec.containers[*]}{.name} {end}{range .spec.template.spec.initContainers[*]}{.env[?(@.name=="DEFAULT_CONFIG")].value}{end}`)
	if !strings.Contains(ds, "nvidia-device-plugin-sidecar") || !strings.HasSuffix(ds, "default") {
		t.Errorf("the device plugin's DaemonSet: %q; want its config manager, default config 'default'", ds)
	}
	var label string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(time.Second) {
		if label = c.Kubectl(t, "get", "node", "gpu-1", "-o", `jsonpath={.metadata.labels.nvidia\.com/device-plugin\.config}`); label != "" {
			break
		}
	}
	if label != "notebooks" {
		t.Errorf("gpu-1's nvidia.com/device-plugin.config label: %q", label)
	}
	sum, _ = addonsRun(t, inv, c, server, false)
	if hc := sum.HostCounts(); hc.Failed != 0 || hc.Changed != 0 {
		t.Errorf("second run: %+v", hc)
	}
}
