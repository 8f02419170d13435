package flow

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpukit/gpukit/pkg/acceptance"
	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/engine/enginetest"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/verify"
	"github.com/gpukit/gpukit/test/gpusim/scriptsim"
)

// gpukit verify over the unit-test GPU simulator replaying real DCGM and
// nccl-tests outputs: a node whose diagnostic and bandwidth pass; one whose
// DCGM diagnostic fails (named, exit 3); one without DCGM (not run, never
// passed) whose replayed bandwidth (a 2-GPU H200 run, 31.9 GB/s) is below
// its floor; the control plane without a GPU is left out; a dry-run runs no
// test.
func TestVerifyReplayedCaptures(t *testing.T) {
	doc := "apiVersion: gpukit.dev/v1alpha1\nkind: Cluster\nmetadata: {name: v}\nspec:\n  versions: {nvidiaDriver: 580.95.05}\n  hosts:\n" +
		"  - {name: cp-1, address: 10.0.0.1, roles: [control-plane]}\n" +
		"  - {name: gpu-1, address: 10.0.1.1, roles: [worker]}\n" +
		"  - {name: gpu-2, address: 10.0.1.2, roles: [worker]}\n" +
		"  - {name: gpu-3, address: 10.0.1.3, roles: [worker]}\n"
	inv, err := inventory.Parse("v.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	hosts := map[string]scriptsim.Host{"cp-1": scriptsim.CPU()}
	for name, set := range map[string]func(*scriptsim.Host){
		"gpu-1": func(h *scriptsim.Host) {
			h.DCGMDiag, h.NCCL = "a100-sxm4-80gb-x8__dcgm3.3.3__diag-r2-pass.txt", "h100-p5__all-reduce-mpirun-tagged.txt"
		},
		"gpu-2": func(h *scriptsim.Host) {
			h.DCGMDiag, h.NCCL = "deepops-prolog__diag-r1-fail.txt", "h100-p5__all-reduce-mpirun-tagged.txt"
		},
		"gpu-3": func(h *scriptsim.Host) { h.NCCL = "h200-2x1__all-reduce-mpijob.txt" },
	} {
		h := scriptsim.Installed("580.95.05", 8)
		set(&h)
		hosts[name] = h
	}
	sim, err := scriptsim.New("", hosts)
	if err != nil {
		t.Fatal(err)
	}
	run := func(dryRun bool, o verify.Options) (*engine.Summary, *VerifyResult) {
		f, err := NewVerify(inv, VerifyOptions{Verify: o})
		if err != nil {
			t.Fatal(err)
		}
		r := &engine.Runner{Name: f.Name, Phases: f.Phases, Sink: &enginetest.Recorder{}, DryRun: dryRun, ReconnectInterval: 10 * time.Millisecond}
		sum, _ := r.Run(context.Background(), f.Machines, sim.Fleet().Dial)
		return sum, f.Result(sum, dryRun)
	}

	sum, r := run(true, verify.Options{Level: 2, NCCL: true})
	if r.Passed || len(r.Nodes) != 3 || sum.HostCounts().Failed != 0 {
		t.Errorf("dry-run: %+v %+v", r, sum.HostCounts())
	}
	for _, n := range r.Nodes {
		if n.DCGM.Status != acceptance.NotRun || n.NCCL.Status != acceptance.NotRun {
			t.Errorf("dry-run ran a test on %s: %+v", n.Host, n)
		}
	}

	sum, r = run(false, verify.Options{Level: 2, NCCL: true, MinNodeBusBW: 380})
	byHost := map[string]verify.Node{}
	for _, n := range r.Nodes {
		byHost[n.Host] = n
	}
	if len(r.Nodes) != 3 || r.Passed || strings.Join(r.Failed, ",") != "gpu-2,gpu-3" {
		t.Fatalf("result: passed %v, failed %v, nodes %+v", r.Passed, r.Failed, r.Nodes)
	}
	if n := byHost["gpu-1"]; n.DCGM.Status != acceptance.Passed || n.NCCL.Status != acceptance.Passed || n.NCCL.BusBW < 480 {
		t.Errorf("gpu-1: %+v", n)
	}
	if n := byHost["gpu-2"]; n.DCGM.Status != acceptance.Failed || !strings.Contains(strings.Join(n.DCGM.Detail, ";"), "Persistence Mode: Fail") {
		t.Errorf("gpu-2: %+v", n)
	}
	if h := hostResultOf(sum, "gpu-2"); h.Status != engine.StatusFailed || !strings.Contains(h.Err.Error(), "DCGM diagnostic level 2 failed") {
		t.Errorf("gpu-2's run: %s %v", h.Status, h.Err)
	}
	n3 := byHost["gpu-3"]
	if n3.DCGM.Status != acceptance.NotRun || !strings.Contains(n3.DCGM.Detail[0], "no dcgmi") {
		t.Errorf("gpu-3's DCGM: %+v, want not run", n3.DCGM)
	}
	if h := hostResultOf(sum, "gpu-3"); h.Status != engine.StatusFailed || !strings.Contains(h.Err.Error(), "31.9 GB/s at 8 GiB, below the 380 GB/s expected") {
		t.Errorf("gpu-3's run: %s %v", h.Status, h.Err)
	}
	if !strings.Contains(strings.Join(r.NotRun, ";"), "gpu-3 dcgm: no dcgmi") || r.Cluster.Status != acceptance.NotRun {
		t.Errorf("not run: %v, cluster %+v", r.NotRun, r.Cluster)
	}

	// The bill's floor for 8 H100 80GB HBM3 (the hosts' GPUs) is used when
	// none is given: gpu-1's replayed 483 GB/s passes it.
	_, r = run(false, verify.Options{NCCL: true})
	for _, n := range r.Nodes {
		if n.Host == "gpu-1" && (n.NCCL.Threshold == 0 || n.NCCL.Status != acceptance.Passed) {
			t.Errorf("gpu-1 against the bill: %+v", n.NCCL)
		}
	}
}

func hostResultOf(sum *engine.Summary, name string) engine.HostResult {
	for _, h := range sum.Hosts {
		if h.Host == name {
			return h
		}
	}
	return engine.HostResult{}
}

// --taint-failed on a real API server with kwok GPU nodes: the node whose
// replayed DCGM diagnostic fails is tainted gpukit.dev/acceptance=failed:
// NoSchedule, the one that passes is not; a second run leaves the taint as
// it is.
func TestVerifyTaintsFailedNodes(t *testing.T) {
	workers := []string{"gpu-1", "gpu-2"}
	_, cs, kc := kubeSetup(t, workers...)
	sim, err := newUpgradeSim(t.TempDir(), workers, []string{"cp-1"}, "580.95.05")
	if err != nil {
		t.Fatal(err)
	}
	for w, diag := range map[string]string{"gpu-1": "a100-sxm4-80gb-x8__dcgm3.3.3__diag-r2-pass.txt", "gpu-2": "deepops-prolog__diag-r1-fail.txt"} {
		if err := sim.Update(w, func(h *scriptsim.Host) { h.DCGMDiag = diag }); err != nil {
			t.Fatal(err)
		}
	}
	inv, err := inventory.Parse("up.yaml", []byte(upgradeInventory(workers...)))
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		f, err := NewVerify(inv, VerifyOptions{Verify: verify.Options{Level: 1}, TaintFailed: true, Kubeconfig: kc})
		if err != nil {
			t.Fatal(err)
		}
		r := &engine.Runner{Name: f.Name, Phases: f.Phases, Sink: &enginetest.Recorder{}, ReconnectInterval: 10 * time.Millisecond}
		sum, _ := r.Run(context.Background(), f.Machines, sim.Fleet().Dial)
		res := f.Result(sum, false)
		if strings.Join(res.Failed, ",") != "gpu-2" {
			t.Fatalf("failed %v", res.Failed)
		}
		for _, w := range workers {
			n, err := cs.CoreV1().Nodes().Get(context.Background(), w, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			tainted := 0
			for _, taint := range n.Spec.Taints {
				if taint.Key == verify.TaintKey && taint.Value == "failed" && taint.Effect == "NoSchedule" {
					tainted++
				}
			}
			if want := map[string]int{"gpu-1": 0, "gpu-2": 1}[w]; tainted != want {
				t.Errorf("%s: %d acceptance taints, want %d: %v", w, tainted, want, n.Spec.Taints)
			}
		}
	}
}
