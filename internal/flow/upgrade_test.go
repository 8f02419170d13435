package flow

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/upgrade"
)

// upgrade driver's one list: the facts, the check, the plan, the snapshot,
// then the rollout group whose phases run wave by wave.
func TestUpgradeDriverFlow(t *testing.T) {
	f, err := NewUpgradeDriver(kubeInv(), UpgradeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := phaseNames(f.Phases), []string{"preflight/facts", "upgrade/check", "upgrade/plan", "upgrade/etcd-snapshot", "upgrade/rollout"}; !reflect.DeepEqual(got, want) {
		t.Errorf("phases %v, want %v", got, want)
	}
	r := &engine.Runner{Phases: f.Phases}
	if _, err := r.Selected(); err != nil {
		t.Fatal(err)
	}
	if got := machineNames(f.Machines); !reflect.DeepEqual(got, []string{"cp1", "cp2", "w1", "w2"}) {
		t.Errorf("machines %v", got)
	}
	// --hosts: those and the first control plane, through which the API is
	// reached.
	f, err = NewUpgradeDriver(kubeInv(), UpgradeOptions{Upgrade: upgrade.Options{Named: []string{"w2", "w1"}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := machineNames(f.Machines); !reflect.DeepEqual(got, []string{"cp1", "w2", "w1"}) {
		t.Errorf("machines with --hosts: %v", got)
	}
	if _, err := NewUpgradeDriver(kubeInv(), UpgradeOptions{Upgrade: upgrade.Options{Named: []string{"w9"}}}); err == nil || !strings.Contains(err.Error(), "w9 is not in the inventory") {
		t.Errorf("unknown host: %v", err)
	}
	// A swarm: no etcd; the nodes are changed through the first manager,
	// never through a kubeconfig.
	f, err = NewUpgradeDriver(swarmInv(), UpgradeOptions{Upgrade: upgrade.Options{Named: []string{"w2"}}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := phaseNames(f.Phases), []string{"preflight/facts", "upgrade/check", "upgrade/plan", "upgrade/rollout"}; !reflect.DeepEqual(got, want) {
		t.Errorf("swarm phases %v, want %v", got, want)
	}
	if got := machineNames(f.Machines); !reflect.DeepEqual(got, []string{"m1", "w2"}) {
		t.Errorf("swarm machines with --hosts: %v", got)
	}
	if _, err := NewUpgradeDriver(swarmInv(), UpgradeOptions{Kubeconfig: []byte("x")}); err == nil || !strings.Contains(err.Error(), "--kubeconfig") {
		t.Errorf("swarm with a kubeconfig: %v", err)
	}
}

// A rollout around its flow: a new one's state is saved at the cluster's
// default path when it starts; a complete run finishes the state and, with
// --write-inventory, records the versions in the file as it is then (an
// edit made during the rollout kept, its mode too); a resumed one takes its
// versions from the state; an unfinished run or a dry-run records nothing.
func TestUpgradeRollout(t *testing.T) {
	stateDir, dir := t.TempDir(), t.TempDir()
	t.Setenv("GPUKIT_STATE_DIR", stateDir)
	file := filepath.Join(dir, "up.yaml")
	doc := "apiVersion: gpukit.dev/v1alpha1\nkind: Cluster\nmetadata: {name: up}\nspec:\n  versions:\n    nvidiaDriver: 580.95.05\n  hosts:\n" +
		"  - {name: cp-1, address: 10.0.0.1, roles: [control-plane]}\n  - {name: gpu-1, address: 10.0.1.1, roles: [worker]}\n"
	if err := os.WriteFile(file, []byte(doc), 0o640); err != nil {
		t.Fatal(err)
	}
	flags := inventory.Overrides{NvidiaDriver: inventory.Override{Flag: "--driver"}, CUDA: inventory.Override{Flag: "--cuda"}, ContainerToolkit: inventory.Override{Flag: "--toolkit"}}
	start := func(t *testing.T, resume, dryRun bool, driver string) (*UpgradeRollout, *UpgradeDriver) {
		t.Helper()
		v := flags
		v.NvidiaDriver.Value = driver
		r, err := DecideUpgrade(file, "", resume, dryRun, v)
		if err != nil {
			t.Fatal(err)
		}
		inv, err := inventory.LoadFile(file, r.Data, r.Versions)
		if err != nil {
			t.Fatal(err)
		}
		f, err := r.Start(inv, UpgradeOptions{}, true)
		if err != nil {
			t.Fatal(err)
		}
		return r, f
	}
	statePath := filepath.Join(stateDir, "up.driver.json")
	failed := &engine.Summary{Hosts: []engine.HostResult{{Host: "gpu-1", Status: engine.StatusFailed}}}

	r, f := start(t, false, false, "590.48.01")
	if f.Upgrade == nil || string(r.Data) != doc {
		t.Fatalf("flow %+v, data %q", f, r.Data)
	}
	st, err := upgrade.LoadState(statePath)
	if err != nil || st.Target.Driver != "590.48.01" || st.Inventory != file || st.Finished != nil {
		t.Fatalf("the new rollout's state: %+v, %v", st, err)
	}
	if res, err := r.Finish(failed); err != nil || res.Complete || res.Written != "" || res.State != statePath {
		t.Errorf("a failed run: %+v, %v", res, err)
	}
	if st, _ := upgrade.LoadState(statePath); st.Finished != nil {
		t.Error("a failed run finished the rollout")
	}
	if err := st.Set("gpu-1", upgrade.InProgress, "", time.Now()); err != nil {
		t.Fatal(err)
	}

	r, _ = start(t, true, false, "")
	if v := r.Versions.NvidiaDriver; v.Value != "590.48.01" || v.Flag != "--driver" {
		t.Errorf("resumed versions: %+v", r.Versions)
	}
	edited := doc + "# edited during the rollout\n"
	if err := os.WriteFile(file, []byte(edited), 0o640); err != nil {
		t.Fatal(err)
	}
	res, err := r.Finish(&engine.Summary{})
	if err != nil || !res.Complete || res.Written != file || res.State != statePath || !reflect.DeepEqual(res.Record, []string{"spec.versions.nvidiaDriver: 590.48.01"}) {
		t.Fatalf("a complete run: %+v, %v", res, err)
	}
	if st, err := upgrade.LoadState(statePath); err != nil || st.Finished == nil {
		t.Errorf("the complete rollout's state is not finished: %+v, %v", st, err)
	}
	b, err := os.ReadFile(file)
	fi, _ := os.Stat(file)
	if err != nil || !strings.Contains(string(b), "nvidiaDriver: 590.48.01") || !strings.Contains(string(b), "# edited during the rollout") || fi.Mode().Perm() != 0o640 {
		t.Errorf("the inventory written (mode %v):\n%s", fi.Mode(), b)
	}

	before, _ := os.ReadFile(file)
	r, _ = start(t, false, true, "595.10.01")
	if res, err := r.Finish(&engine.Summary{}); err != nil || !res.DryRun || res.State != "" || res.Written != "" {
		t.Errorf("a dry-run: %+v, %v", res, err)
	}
	if after, _ := os.ReadFile(file); string(after) != string(before) {
		t.Error("a dry-run wrote the inventory")
	}
}
