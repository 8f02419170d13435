package cluster

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The control plane is real: its version is the one built, a GPU node
// added on demand becomes Ready with its capacity and labels, pods
// requesting GPUs are scheduled onto it and reach Running, a pod asking for
// more GPUs than any node has stays Pending with the scheduler's reason; a
// second control plane runs beside the first, separate from it, and the
// admission webhooks are off unless asked for.
func TestControlPlaneSchedulesGPUPods(t *testing.T) {
	t.Parallel()
	c := Start(t, Options{})
	var v struct {
		ServerVersion struct{ GitVersion string } `json:"serverVersion"`
	}
	if err := json.Unmarshal([]byte(c.Kubectl(t, "version", "-o", "json")), &v); err != nil || !strings.HasPrefix(v.ServerVersion.GitVersion, "v1.") {
		t.Fatalf("server version %+v (%v): the build's ldflags are missing", v, err)
	}
	c.AddNode(t, GPUNode{Name: "gpu-1", GPUs: 8, Labels: map[string]string{"rack": "r1"}})
	c.AddNode(t, GPUNode{Name: "cpu-1"})
	labels := c.Kubectl(t, "get", "node", "gpu-1", "-o", "jsonpath={.status.allocatable.nvidia\\.com/gpu} {.metadata.labels.nvidia\\.com/gpu\\.product} {.metadata.labels.rack}")
	if labels != "8 NVIDIA-H100-80GB-HBM3 r1" {
		t.Errorf("gpu-1: %q", labels)
	}
	c.Apply(t, `apiVersion: apps/v1
kind: Deployment
metadata: {name: train}
spec:
  replicas: 2
  selector: {matchLabels: {app: train}}
  template:
    metadata: {labels: {app: train}}
    spec:
      containers:
      - name: train
        image: registry.invalid/train:1
        resources: {limits: {nvidia.com/gpu: 4}}
---
apiVersion: v1
kind: Pod
metadata: {name: too-big}
spec:
  containers:
  - name: c
    image: registry.invalid/big:1
    resources: {limits: {nvidia.com/gpu: 9}}
`)
	c.Kubectl(t, "rollout", "status", "deployment/train", "--timeout=90s")
	pods := c.Kubectl(t, "get", "pods", "-l", "app=train", "-o", "jsonpath={range .items[*]}{.spec.nodeName} {.status.phase}{\"\\n\"}{end}")
	if pods != "gpu-1 Running\ngpu-1 Running" {
		t.Errorf("train pods: %q (want both Running on gpu-1, none on cpu-1)", pods)
	}
	var reason string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(300 * time.Millisecond) {
		reason = c.Kubectl(t, "get", "pod", "too-big", "-o", "jsonpath={.status.phase} {.status.conditions[?(@.type==\"PodScheduled\")].message}")
		if strings.Contains(reason, "Insufficient nvidia.com/gpu") {
			break
		}
	}
	if !strings.HasPrefix(reason, "Pending") || !strings.Contains(reason, "Insufficient nvidia.com/gpu") {
		t.Errorf("too-big: %q", reason)
	}

	// A webhook no server answers: with webhooks off (the default) the
	// apiserver does not call it; with them on, it refuses the object.
	second := Start(t, Options{Webhooks: true})
	if second.Kubeconfig == c.Kubeconfig {
		t.Fatal("the same control plane twice")
	}
	if nodes := second.Kubectl(t, "get", "nodes", "-o", "name"); nodes != "" {
		t.Errorf("the second control plane sees the first's nodes: %q", nodes)
	}
	const webhook = `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: nobody-answers}
webhooks:
- name: nobody.answers.invalid
  admissionReviewVersions: [v1]
  sideEffects: None
  failurePolicy: Fail
  clientConfig: {service: {namespace: default, name: nobody, port: 443}}
  rules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}]
`
	for _, tt := range []struct {
		c      *Cluster
		called bool
	}{{c, false}, {second, true}} {
		tt.c.Apply(t, webhook)
		out, err := tt.c.TryKubectl("create", "configmap", "probe", "--from-literal=a=b")
		if called := err != nil && strings.Contains(out, "failed calling webhook"); called != tt.called {
			t.Errorf("webhooks on %v: creating a configmap said %q (%v)", tt.called, out, err)
		}
	}
}

// A control plane whose owner dies (a test binary that crashed) shuts
// down by itself, components included: nothing is left running.
func TestControlPlaneDiesWithItsOwner(t *testing.T) {
	Require(t)
	t.Parallel()
	bin := Binaries(t)
	owner := exec.Command("sleep", "600")
	if err := owner.Start(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	env := exec.Command(filepath.Join(bin, "kube-env"), "up", "-dir", dir, "-bin", bin, "-owner-pid", strconv.Itoa(owner.Process.Pid))
	if err := env.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = env.Wait(); close(exited) }()
	defer func() { _ = env.Process.Kill() }()
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(100 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(dir, "ready")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("not ready in 2 minutes")
		}
	}
	pid, err := os.ReadFile(filepath.Join(dir, "kube-apiserver.pid"))
	if err != nil {
		t.Fatal(err)
	}
	_ = owner.Process.Kill()
	_ = owner.Wait()
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		t.Fatal("kube-env outlived its owner by 30 s")
	}
	if p, _ := strconv.Atoi(strings.TrimSpace(string(pid))); p <= 0 || syscall.Kill(p, 0) == nil {
		t.Errorf("kube-apiserver (pid %s) outlived kube-env", strings.TrimSpace(string(pid)))
	}
}
