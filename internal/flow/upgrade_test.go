package flow

import (
	"reflect"
	"strings"
	"testing"

	"github.com/gpukit/gpukit/pkg/engine"
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
