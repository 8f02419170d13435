package nvidia_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/engine/enginetest"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/nvidia"
	"github.com/gpukit/gpukit/pkg/preflight"
	"github.com/gpukit/gpukit/test/gpusim/scriptsim"
)

// migRun is initRun with the MIG phase after verify, as gpukit init has it.
func migRun(t *testing.T, inv *inventory.Inventory, sim *scriptsim.Sim, dryRun bool) (*engine.Summary, *enginetest.Recorder) {
	t.Helper()
	checks := preflight.New(inv)
	l := nvidia.New(inv, nvidia.Options{MaxParallelReboots: 1, RebootTimeout: time.Minute})
	phases := []engine.Phase{checks.Facts(), checks.HostChecks(), checks.ClusterChecks(),
		l.Prepare(), l.Driver(), l.FabricManager(), l.Persistenced(), l.CUDA(), l.ContainerToolkit(), l.Reboot(), l.Verify(), l.MIG()}
	rec := &enginetest.Recorder{}
	r := &engine.Runner{Name: "gpukit init", Phases: phases, DryRun: dryRun, Sink: rec, ReconnectInterval: 10 * time.Millisecond}
	sum, _ := r.Run(context.Background(), inv.Machines, sim.Fleet().Dial)
	return sum, rec
}

func migHosts(t *testing.T, gpus int) *scriptsim.Sim {
	t.Helper()
	hosts := map[string]scriptsim.Host{}
	for _, name := range []string{"gpu-001", "gpu-002"} {
		hosts[name] = scriptsim.Fresh(gpus)
	}
	sim, err := scriptsim.New("", hosts)
	if err != nil {
		t.Fatal(err)
	}
	return sim
}

func migDevices(sim *scriptsim.Sim, host string, gpu int) string {
	g := sim.Host(host).MIG.GPUs[gpu]
	if g == nil {
		return "<none>"
	}
	return g.Mode + " " + strings.Join(scriptsim.Devices(g), ",")
}

// Fresh H100 hosts (real -lgip profiles, SIMULATED GPUs) get the layout
// after the driver: MIG on, the instances, the boot unit; a second run
// changes nothing; a new layout changes them; no layout removes the unit.
func TestMIGLayoutApplied(t *testing.T) {
	t.Parallel()
	inv := testInventory(t, `mig: {layout: all-balanced, rules: [{labels: {}, gpu: H100, layout: all-1g.10gb}], layouts: {mixed: [{gpus: [0], profiles: {3g.40gb: 2}}, {enabled: false}]}}`)
	sim := migHosts(t, 2)
	sum, rec := migRun(t, inv, sim, false)
	if c := sum.HostCounts(); c.Changed != 2 || c.Failed != 0 {
		t.Fatalf("first run: %+v %+v", c, sum.Hosts)
	}
	for _, h := range []string{"gpu-001", "gpu-002"} {
		for gpu := range 2 {
			if got, want := migDevices(sim, h, gpu), "Enabled "+strings.TrimSuffix(strings.Repeat("1g.10gb,", 7), ","); got != want {
				t.Errorf("%s GPU %d: %s, want %s", h, gpu, got, want)
			}
		}
		if !sim.Host(h).MIG.Unit {
			t.Errorf("%s: no boot unit", h)
		}
	}
	if w := writes(rec); !contains(w, "gpu-001:partition the GPUs") {
		t.Errorf("writes %v", w)
	}
	sum, rec = migRun(t, inv, sim, false)
	if c := sum.HostCounts(); c.Changed != 0 || c.Failed != 0 {
		t.Errorf("second run: %+v, wrote %v", c, writes(rec))
	}

	// Another layout for one host: GPU 0 two 3g.40gb, GPU 1 MIG off.
	inv = testInventory(t, `mig: {layout: all-balanced, layouts: {mixed: [{gpus: [0], profiles: {3g.40gb: 2}}, {enabled: false}]}}`)
	inv.Machines[1].MIG = "mixed"
	sum, _ = migRun(t, inv, sim, false)
	if c := sum.HostCounts(); c.Changed != 2 || c.Failed != 0 {
		t.Fatalf("new layouts: %+v %+v", c, sum.Hosts)
	}
	if got := migDevices(sim, "gpu-002", 0); got != "Enabled 3g.40gb,3g.40gb" {
		t.Errorf("gpu-002 GPU 0: %s", got)
	}
	if got := migDevices(sim, "gpu-002", 1); got != "Disabled " {
		t.Errorf("gpu-002 GPU 1: %q", got)
	}
	if got := migDevices(sim, "gpu-001", 1); got != "Enabled 3g.40gb,2g.20gb,1g.10gb,1g.10gb" {
		t.Errorf("gpu-001 GPU 1 (all-balanced): %s", got)
	}

	// No layout: the unit goes, the GPUs keep what they have.
	inv = testInventory(t, "")
	sum, _ = migRun(t, inv, sim, false)
	if c := sum.HostCounts(); c.Changed != 2 || c.Failed != 0 {
		t.Fatalf("no layout: %+v %+v", c, sum.Hosts)
	}
	if sim.Host("gpu-001").MIG.Unit || sim.Host("gpu-001").MIG.Script != "" {
		t.Error("the boot unit stayed")
	}
	if sum, _ = migRun(t, inv, sim, false); sum.HostCounts().Changed != 0 {
		t.Errorf("no layout, again: %+v", sum.HostCounts())
	}
}

// A layout the GPU cannot hold fails the host in a dry-run (plan), naming
// the GPU and why, before anything is installed; nothing is written.
func TestMIGLayoutRefusedInPlan(t *testing.T) {
	t.Parallel()
	inv := testInventory(t, `mig: {layout: all-balanced, layouts: {big: [{profiles: {4g.40gb: 1, 3g.40gb: 2}}]}}`)
	inv.Machines[1].MIG = "big"
	sim := migHosts(t, 1)
	sum, rec := migRun(t, inv, sim, true)
	failed := sum.Failed()
	if len(failed) != 1 || failed[0].Host != "gpu-002" || failed[0].Err == nil || !strings.Contains(failed[0].Err.Error(), "GPU 0") || !strings.Contains(failed[0].Err.Error(), "compute slices") {
		t.Fatalf("failed %+v", sum.Hosts)
	}
	if len(sim.Host("gpu-002").Writes) != 0 {
		t.Errorf("a dry-run wrote %v", sim.Host("gpu-002").Writes)
	}
	planned := 0
	for _, e := range rec.OfType("planned") {
		if e.Host == "gpu-001" && strings.Contains(e.Step, "partition the GPUs") {
			planned++
		}
	}
	if planned != 1 {
		t.Errorf("gpu-001's MIG step planned %d times", planned)
	}
}

func contains(list []string, prefix string) bool {
	for _, s := range list {
		if strings.HasPrefix(s, prefix) {
			return true
		}
	}
	return false
}
