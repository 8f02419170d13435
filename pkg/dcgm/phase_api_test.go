package dcgm_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gpukit/gpukit/pkg/dcgm"
	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/kube"
	"github.com/gpukit/gpukit/test/cluster"
)

// A pod labelled as an exporter proves nothing: gpukit status reads only
// the pods a trusted DaemonSet owns in its namespace. Here gpukit's own
// exporter (a real DaemonSet; kwok runs its pod, so nothing answers behind
// the API server's proxy and the read fails, naming it) and a tenant's pod
// with the GPU Operator's label: never read, never named.
func TestMetricsReadsOnlyTrustedExporters(t *testing.T) {
	cluster.Require(t)
	t.Parallel()
	c := cluster.Start(t, cluster.Options{})
	c.AddNode(t, cluster.GPUNode{Name: "gpu-1", GPUs: 8})
	c.Apply(t, `apiVersion: v1
kind: Namespace
metadata: {name: monitoring}
---
apiVersion: v1
kind: Namespace
metadata: {name: tenant}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: dcgm-exporter, namespace: monitoring}
spec:
  selector: {matchLabels: {app.kubernetes.io/name: dcgm-exporter}}
  template:
    metadata: {labels: {app.kubernetes.io/name: dcgm-exporter}}
    spec: {containers: [{name: exporter, image: registry.invalid/dcgm-exporter:1, ports: [{name: metrics, containerPort: 9400}]}]}
---
apiVersion: v1
kind: Pod
metadata: {name: nvidia-dcgm-exporter-x1y2z, namespace: tenant, labels: {app: nvidia-dcgm-exporter}}
spec: {nodeName: gpu-1, containers: [{name: fake, image: registry.invalid/fake:1}]}
`)
	for _, args := range [][]string{
		{"-n", "monitoring", "rollout", "status", "daemonset/dcgm-exporter", "--timeout=120s"},
		{"-n", "tenant", "wait", "--for=jsonpath={.status.phase}=Running", "pod/nvidia-dcgm-exporter-x1y2z", "--timeout=120s"},
	} {
		c.Kubectl(t, args...)
	}
	kc, err := os.ReadFile(c.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	all := func(hosts []*engine.Host) []*engine.Host { return hosts }
	m := dcgm.NewMetrics(&kube.Local{Kubeconfig: kc}, all, append([]dcgm.Source{{Namespace: "monitoring", DaemonSet: "dcgm-exporter"}}, dcgm.OperatorSources...))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := m.Run(ctx, engine.NewHost(inventory.Machine{Name: "cp-1"}, nil, engine.HostOptions{})); err != nil {
		t.Fatal(err)
	}
	un := m.Unanswered()
	if len(un) != 1 || !strings.Contains(un[0], "gpu-1 (monitoring/dcgm-exporter-") {
		t.Errorf("unanswered: %q, want gpukit's exporter only", un)
	}
	if got := m.Node("gpu-1"); len(got) != 0 {
		t.Errorf("readings of gpu-1: %+v", got)
	}
}
