package cli

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpukit/gpukit/internal/flow"
	"github.com/gpukit/gpukit/pkg/acceptance"
	"github.com/gpukit/gpukit/pkg/bootstrap/kubeadm"
	"github.com/gpukit/gpukit/pkg/bundle"
	"github.com/gpukit/gpukit/pkg/event"
	"github.com/gpukit/gpukit/pkg/gpuhealth"
	"github.com/gpukit/gpukit/pkg/kubeflow"
	"github.com/gpukit/gpukit/pkg/swarmapi"
	"github.com/gpukit/gpukit/pkg/ui"
	"github.com/gpukit/gpukit/pkg/verify"
	"github.com/gpukit/gpukit/test/golden"
)

// Each command's final object (-o json), one golden per kind: the fields a
// script reads, their names and their order are the versioned contract.
func TestResultGoldens(t *testing.T) {
	counts := event.HostCounts{Changed: 2, Unchanged: 1, Failed: 1}
	gpus := []gpuhealth.HostGPUs{{Host: "gpu-001", Status: "ok", Driver: "580.95.05", CUDA: "13.0"},
		{Host: "gpu-002", Status: "fail", Error: "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver"}}
	initRes := flow.NewInitResult(false, false)
	initRes.Hosts = counts
	initRes.Files = flow.Files{Kubeconfig: "gpu-lab.kubeconfig", Credentials: "gpu-lab.credentials",
		Merged: &flow.MergedKubeconfig{Path: "/root/.kube/config", Context: "gpu-lab-admin@gpu-lab", Changed: true}}
	addRes := flow.NewInitResult(true, true)
	addRes.Stopped, addRes.Hosts = true, event.HostCounts{Failed: 1}
	for _, r := range []flow.Result{
		initRes,
		addRes,
		&flow.KubernetesStatus{Header: flow.NewHeader(flow.KindKubernetesStatus), Problems: []string{"gpu-002's GPUs fail their health check"},
			Nodes: []kubeadm.NodeStatus{{Name: "cp-1", Roles: []string{"control-plane"}, Ready: "True", Kubelet: "v1.37.2", Runtime: "containerd://2.3.1"},
				{Name: "gpu-001", Ready: "True", Kubelet: "v1.37.2", Runtime: "containerd://2.3.1", GPUs: "8", Labels: map[string]string{"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}},
				{Name: "gpu-002", Ready: "True", Kubelet: "v1.37.2", Runtime: "containerd://2.3.1", Resources: map[string]string{"nvidia.com/mig-1g.10gb": "14", "nvidia.com/mig-3g.40gb": "2"},
					Labels: map[string]string{"nvidia.com/mig.strategy": "mixed", "nvidia.com/device-plugin.config": "default"}}},
			GPUs: gpus, Unanswered: []string{"gpu-002"}},
		&flow.SwarmStatus{Header: flow.NewHeader(flow.KindSwarmStatus), Healthy: true,
			Nodes: []swarmapi.Node{{ID: "abc", Hostname: "gpu-001", Role: "worker", Availability: "active", State: "ready", Engine: "20.10.24", GPUs: []string{"GPU-1"}}},
			GPUs:  gpus[:1]},
		&flow.UpgradeResult{Header: flow.NewHeader(flow.KindUpgrade), Order: []string{"gpu-001", "gpu-002"}, Waves: 2,
			Snapshot: "/var/lib/gpukit/etcd-before-upgrade.db", State: "/root/.gpukit/upgrades/gpu-lab.driver.json",
			Record: []string{"spec.versions.nvidiaDriver: 590.48.01"}, Unfinished: []string{"gpu-002: failed in nvidia/verify"}, APIRequests: 31, Hosts: counts},
		&flow.KubeflowDeployResult{Header: flow.NewHeader(flow.KindKubeflowDeploy), Hosts: event.HostCounts{Changed: 1}, Files: flow.Files{Credentials: "gpu-lab.credentials"}},
		&flow.KubeflowStatusResult{Header: flow.NewHeader(flow.KindKubeflowStatus), Status: &kubeflow.Status{
			Releases: []kubeflow.ReleaseStatus{{Name: "traefik", Namespace: "traefik", Chart: "traefik", Want: "41.3.0", Deployed: "41.3.0", Status: "deployed"}},
			Kubeflow: kubeflow.Deployments{Deployments: 40, Available: 39, NotAvailable: []string{"kubeflow/ml-pipeline"}},
			URLs:     []string{"https://grafana.10.0.0.10.nip.io"}}},
		&flow.ResetResult{Header: flow.NewHeader(flow.KindReset), DryRun: true, Reset: []string{"gpu-002"}, Hosts: event.HostCounts{Unchanged: 1}},
		verifyResult,
		&bundleListResult{Header: flow.NewHeader(flow.KindBundleList), List: &bundle.List{Cluster: "gpu-lab", Artifacts: []bundle.Artifact{
			{Kind: bundle.Package, Name: "kubeadm", Version: "1.37.2", Family: "debian-12", Source: "https://pkgs.k8s.io/core:/stable:/v1.37/deb/ /",
				For: []string{"Kubernetes 1.37.2"}, Hosts: []string{"cp-1", "gpu-001"}},
			{Kind: bundle.Image, Name: "registry.k8s.io/pause:3.10.2", For: []string{"kubeadm 1.37.2"}},
			{Kind: bundle.Package, Name: "the packages of gpu-002", Hosts: []string{"gpu-002"}, Unknown: "the host did not answer"}}}},
	} {
		kind := r.ResultKind()
		t.Run(string(kind), func(t *testing.T) {
			var b bytes.Buffer
			if err := writeResult(ui.Output{W: &b, Format: ui.FormatJSON}, r); err != nil {
				t.Fatal(err)
			}
			var h flow.Header
			if err := json.Unmarshal(b.Bytes(), &h); err != nil || h.Type != kind || h.APIVersion != flow.ResultAPIVersion {
				t.Fatalf("header %+v, %v: %s", h, err, b.String())
			}
			var indented bytes.Buffer
			if err := json.Indent(&indented, b.Bytes(), "", "  "); err != nil {
				t.Fatal(err)
			}
			golden.Assert(t, filepath.Join("testdata", "results", string(kind)+".json"), indented.Bytes())
		})
	}
}

// The plain display prints no JSON object.
func TestResultPlainWritesNothing(t *testing.T) {
	var b bytes.Buffer
	if err := writeResult(ui.Output{W: &b, Format: ui.FormatPlain}, flow.NewInitResult(false, false)); err != nil || b.Len() != 0 {
		t.Fatalf("%v %q", err, b.String())
	}
}

// status on Kubernetes names what each node advertises: whole GPUs, MIG
// devices (strategy mixed), shared GPUs.
func TestKubeStatusShowsAdvertisedResources(t *testing.T) {
	var b strings.Builder
	r := &flow.KubernetesStatus{Header: flow.NewHeader(flow.KindKubernetesStatus), Healthy: true, Nodes: []kubeadm.NodeStatus{
		{Name: "gpu-001", Ready: "True", GPUs: "8"},
		{Name: "gpu-002", Ready: "True", Resources: map[string]string{"nvidia.com/mig-3g.40gb": "2", "nvidia.com/mig-1g.10gb": "14"}},
		{Name: "gpu-003", Ready: "True", GPUs: "0", Resources: map[string]string{"nvidia.com/gpu.shared": "32"}, Unschedulable: true},
	}}
	if err := writeKubeStatus(ui.Output{Format: ui.FormatPlain, W: &b}, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"gpu-001  ", " 8 ", "mig-1g.10gb:14 mig-3g.40gb:2", "0 gpu.shared:32 (cordoned)", "3 node(s), 3 Ready, 8 schedulable nvidia.com/gpu"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("status lacks %q:\n%s", want, b.String())
		}
	}
}

var verifyResult = &flow.VerifyResult{Header: flow.NewHeader(flow.KindVerify), Failed: []string{"gpu-002"},
	NotRun: []string{"gpu-003 dcgm: no dcgmi on the host (NVIDIA's datacenter-gpu-manager package)"},
	Nodes: []verify.Node{
		{Host: "gpu-001", GPU: "NVIDIA H100 80GB HBM3", GPUs: 8, DCGM: verify.Test{Status: acceptance.Passed},
			NCCL: verify.Test{Status: acceptance.Passed, BusBW: 483.4, Threshold: 380, Detail: []string{"bus bandwidth 483.4 GB/s at 16 GiB (threshold 380)"}}},
		{Host: "gpu-002", GPU: "NVIDIA H100 80GB HBM3", GPUs: 8, Tainted: true,
			DCGM: verify.Test{Status: acceptance.Failed, Detail: []string{"Deployment/Persistence Mode: Fail"}},
			NCCL: verify.Test{Status: acceptance.Failed, BusBW: 31.9, Threshold: 380, Detail: []string{"bus bandwidth 31.9 GB/s at 8 GiB, below the 380 GB/s expected"}}},
		{Host: "gpu-003", GPU: "NVIDIA H100 80GB HBM3", GPUs: 8, DCGM: verify.Test{Status: acceptance.NotRun, Detail: []string{"no dcgmi on the host (NVIDIA's datacenter-gpu-manager package)"}},
			NCCL: verify.Test{Status: acceptance.Passed, BusBW: 483.4, Threshold: 380}},
	},
	Cluster: verify.Test{Status: acceptance.NotRun, Detail: []string{"3 GPU nodes: not built yet"}}}

// verify's table names each node's tests, the failures' and not-run's
// reasons, and the verdict.
func TestVerifyPlain(t *testing.T) {
	var b strings.Builder
	if err := writeVerify(ui.Output{Format: ui.FormatPlain, W: &b}, verifyResult); err != nil {
		t.Fatal(err)
	}
	golden.AssertString(t, "testdata/results/verify.txt", b.String())
}
