package flow

import (
	"reflect"
	"strings"
	"testing"

	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/inventory"
)

func swarmInv() *inventory.Inventory {
	inv := &inventory.Inventory{Machines: []inventory.Machine{
		{Name: "m1", Roles: []inventory.Role{inventory.RoleManager}},
		{Name: "m2", Roles: []inventory.Role{inventory.RoleManager}},
		{Name: "w1", Roles: []inventory.Role{inventory.RoleWorker}},
		{Name: "w2", Roles: []inventory.Role{inventory.RoleWorker}},
	}}
	inv.Cluster.Spec.Orchestrator = inventory.Swarm
	return inv
}

func machineNames(ms []inventory.Machine) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Name
	}
	return out
}

// With orchestrator swarm, init's one list goes on after the NVIDIA layer.
func TestInitFlowSwarm(t *testing.T) {
	f := NewInit(swarmInv(), InitOptions{})
	got := phaseNames(f.Phases)
	want := []string{"nvidia/verify", "nvidia/mig", "swarm/engine", "swarm/runtime", "swarm/init", "swarm/join-managers", "swarm/join-workers", "swarm/labels",
		"platform/ingress", "platform/monitoring", "platform/gpu-metrics", "platform/training-metrics"}
	if !reflect.DeepEqual(got[len(got)-len(want):], want) {
		t.Errorf("phases %v", got)
	}
	if _, err := engine.SelectPhases(f.Phases, []string{"swarm"}, nil); err != nil {
		t.Errorf("--only-phases swarm: %v", err)
	}
}

// add-node connects to the named hosts and the first manager; every phase
// but the labels (on the manager) is scoped to the named hosts.
func TestAddNodeFlow(t *testing.T) {
	f, err := NewAddNode(swarmInv(), []string{"w2", "m2"}, InitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := machineNames(f.Machines); !reflect.DeepEqual(got, []string{"w2", "m2", "m1"}) {
		t.Errorf("machines %v", got)
	}
	for _, p := range f.Phases {
		s, scoped := p.(engine.Scoped)
		switch {
		case p.Name() == "swarm/labels" && scoped:
			t.Errorf("labels are scoped: they run on the manager")
		case p.Name() != "swarm/labels" && (!scoped || !reflect.DeepEqual(s.Hosts, []string{"w2", "m2"})):
			t.Errorf("%s is not scoped to the new hosts", p.Name())
		}
	}
	for _, tt := range []struct {
		names []string
		err   string
	}{
		{nil, "name the hosts to add"},
		{[]string{"w9"}, "w9 is not in the inventory"},
		{[]string{"m1"}, "m1 is the first manager"},
		{[]string{"w1", "w1"}, "w1 is named twice"},
	} {
		if _, err := NewAddNode(swarmInv(), tt.names, InitOptions{}); err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("%v: %v, want %q", tt.names, err, tt.err)
		}
	}
}

// reset of some hosts also connects to a manager that stays; of all, to
// every host.
func TestResetFlow(t *testing.T) {
	swarmPhases := []string{"reset/demote", "reset/leave", "reset/remove-nodes", "reset/proxy"}
	withPlatform := append([]string{"reset/platform"}, swarmPhases...)
	for _, tt := range []struct {
		names, hosts, machines, phases []string
	}{
		{nil, []string{"m1", "m2", "w1", "w2"}, []string{"m1", "m2", "w1", "w2"}, withPlatform},
		// the platform stays while its first manager does
		{[]string{"w1"}, []string{"w1"}, []string{"w1", "m1"}, swarmPhases},
		{[]string{"m1", "w2"}, []string{"m1", "w2"}, []string{"m1", "w2", "m2"}, withPlatform},
	} {
		f, err := NewReset(swarmInv(), tt.names)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(f.Hosts, tt.hosts) || !reflect.DeepEqual(machineNames(f.Machines), tt.machines) {
			t.Errorf("%v: hosts %v, machines %v", tt.names, f.Hosts, machineNames(f.Machines))
		}
		if got := phaseNames(f.Phases); !reflect.DeepEqual(got, tt.phases) {
			t.Errorf("phases %v", got)
		}
		// The result names the hosts reset, not the manager that stays.
		if r := f.Result(&engine.Summary{}, true); r.Type != KindReset || !r.DryRun || !reflect.DeepEqual(r.Reset, tt.hosts) {
			t.Errorf("%v: result %+v", tt.names, r)
		}
	}
	if _, err := NewReset(swarmInv(), []string{"nope"}); err == nil {
		t.Error("reset accepted a host not in the inventory")
	}
}

func TestStatusFlow(t *testing.T) {
	f, err := NewStatus(swarmInv(), StatusOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := machineNames(f.Machines); !reflect.DeepEqual(got, []string{"m1", "m2", "w1", "w2"}) {
		t.Errorf("status connects to %v, want every host (the first manager lists the nodes)", got)
	}
}
