package flow

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/engine/enginetest"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/mig"
	"github.com/gpukit/gpukit/pkg/nvidia"
	"github.com/gpukit/gpukit/pkg/upgrade"
	"github.com/gpukit/gpukit/test/gpusim/scriptsim"
)

// runMIGApply is gpukit mig apply over the simulated hosts.
func runMIGApply(t *testing.T, ctx context.Context, doc string, kc []byte, sim *scriptsim.Sim, o upgrade.Options) (*engine.Summary, *UpgradeDriver) {
	t.Helper()
	inv, err := inventory.Parse("up.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	o.Poll, o.GPUTimeout = 200*time.Millisecond, time.Minute
	o.Drain.Timeout, o.Drain.GracePeriod = time.Minute, -1
	f, err := NewMIGApply(inv, UpgradeOptions{NVIDIA: nvidia.Options{MaxParallelReboots: 16, RebootTimeout: time.Minute}, Upgrade: o, Kubeconfig: kc})
	if err != nil {
		t.Fatal(err)
	}
	r := &engine.Runner{Name: f.Name, Phases: f.Phases, Sink: &enginetest.Recorder{}, ReconnectInterval: 10 * time.Millisecond}
	sum, _ := r.Run(ctx, f.Machines, sim.Fleet().Dial)
	if sum == nil {
		t.Fatal("the run did not start")
	}
	return sum, f
}

// gpukit mig apply against a real API server with kwok GPU nodes and the
// unit-test GPU simulator (real H100 -lgip profiles): one node at a time
// (--max-unavailable 1) is cordoned, drained, partitioned and uncordoned;
// the node running training is left alone, its pod untouched; the state
// records the layouts; a second run changes nothing; a resume with other
// layouts is refused.
func TestMIGApplyRollsThroughTheAPI(t *testing.T) {
	workers := []string{"gpu-1", "gpu-2", "gpu-3"}
	c, cs, kc := kubeSetup(t, workers...)
	gpuWorkloads(t, c, "gpu-3")
	train := trainingPod(t, cs)
	sim, err := newUpgradeSim(t.TempDir(), workers, []string{"cp-1"}, "580.95.05")
	if err != nil {
		t.Fatal(err)
	}
	watch := watchUnschedulable(t, cs)
	ctx := context.Background()
	doc := upgradeInventory(workers...) + "  nvidia: {mig: {layout: all-balanced, layouts: {inference: [{profiles: {1g.10gb: 7}}]}}}\n"
	doc = strings.Replace(doc, "{name: gpu-2, address: 10.0.1.2, roles: [worker]}", "{name: gpu-2, address: 10.0.1.2, roles: [worker], mig: inference}", 1)
	inv, err := inventory.Parse("up.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	statePath := filepath.Join(t.TempDir(), "up.mig.json")
	state := upgrade.NewState(statePath, "up", "up.yaml", upgrade.Target{MIG: mig.Digest(inv)}, time.Now())

	start := time.Now()
	sum, f := runMIGApply(t, ctx, doc, kc, sim, upgrade.Options{Budget: upgrade.Budget{N: 1}, State: state})
	t.Logf("mig apply on 3 GPU nodes (2 changed, 1 left for its training): %s", time.Since(start).Round(time.Millisecond))
	for w, want := range map[string]string{"gpu-1": "3g.40gb,2g.20gb,1g.10gb,1g.10gb", "gpu-2": strings.TrimSuffix(strings.Repeat("1g.10gb,", 7), ",")} {
		if h := hostResult(sum, w); h.Status != engine.StatusOK {
			t.Errorf("%s: %s in %s: %v %s", w, h.Status, h.Phase, h.Err, h.Reason)
		}
		for gpu := range simGPUs {
			if g := sim.Host(w).MIG.GPUs[gpu]; g == nil || strings.Join(scriptsim.Devices(g), ",") != want {
				t.Errorf("%s GPU %d: %+v, want %s", w, gpu, g, want)
			}
		}
		if st, _ := state.Node(w); st.Status != upgrade.Done {
			t.Errorf("state of %s: %+v", w, st)
		}
	}
	if h := hostResult(sum, "gpu-3"); h.Status != engine.StatusSkipped || !strings.Contains(h.Reason, "training still running") {
		t.Errorf("gpu-3: %s %q, want left alone for its training", h.Status, h.Reason)
	}
	if got := trainingPod(t, cs); got.UID != train.UID || got.Status.Phase != corev1.PodRunning || got.DeletionTimestamp != nil {
		t.Errorf("the training pod was disturbed: %s %s", got.UID, got.Status.Phase)
	}
	if writes := sim.Host("gpu-3").Writes; len(writes) > 0 {
		t.Errorf("gpu-3 runs training and was changed: %v", writes)
	}
	if writes := sim.Host("cp-1").Writes; len(writes) > 0 {
		t.Errorf("the control plane was changed (no etcd snapshot for a MIG layout): %v", writes)
	}
	if most, at := watch.max(); most != 1 {
		t.Errorf("%d GPU nodes unschedulable at once (%v); want 1", most, at)
	}
	for _, w := range workers {
		if n, err := cs.CoreV1().Nodes().Get(ctx, w, metav1.GetOptions{}); err != nil || n.Spec.Unschedulable {
			t.Errorf("%s stays cordoned (%v)", w, err)
		}
	}
	if why := f.Upgrade.Unfinished(); len(why) != 1 || !strings.HasPrefix(why[0], "gpu-3") {
		t.Errorf("unfinished: %v", why)
	}

	// Again: the partitioned nodes are not touched (nothing to do); gpu-3
	// is cordoned, asked to checkpoint and handed back again.
	writes := len(sim.Host("gpu-1").Writes) + len(sim.Host("gpu-2").Writes)
	sum, f = runMIGApply(t, ctx, doc, kc, sim, upgrade.Options{Budget: upgrade.Budget{N: 1}})
	if c := sum.HostCounts(); c.Failed != 0 || len(f.Upgrade.Order()) != 1 || f.Upgrade.Order()[0] != "gpu-3" {
		t.Errorf("second run: %+v, order %v", c, f.Upgrade.Order())
	}
	for _, w := range []string{"gpu-1", "gpu-2"} {
		if h := hostResult(sum, w); h.Changed || !strings.Contains(h.Reason, "the GPUs hold their MIG layout") {
			t.Errorf("%s on the second run: %s %q", w, h.Status, h.Reason)
		}
	}
	if now := len(sim.Host("gpu-1").Writes) + len(sim.Host("gpu-2").Writes); now != writes {
		t.Errorf("the second run wrote on partitioned nodes: %v %v", sim.Host("gpu-1").Writes, sim.Host("gpu-2").Writes)
	}

	// A resume of this rollout with other layouts is refused.
	if _, _, err := upgrade.Decide(statePath, true, upgrade.Target{MIG: "other"}); err == nil || !strings.Contains(err.Error(), "mig") {
		t.Errorf("resume with other layouts: %v", err)
	}
}
