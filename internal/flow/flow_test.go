package flow

import (
	"reflect"
	"testing"

	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/preflight"
)

func phaseNames(ps []engine.Phase) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.Name()
	}
	return out
}

// The phase list is the contract of --only-phases / --skip-phases and of
// the logs: a change to it shows here.
func TestPreflightFlow(t *testing.T) {
	inv := &inventory.Inventory{Machines: []inventory.Machine{{Name: "a"}, {Name: "b"}}}
	f := NewPreflight(inv)
	want := []string{preflight.PhaseFacts, preflight.PhaseChecks, preflight.PhaseCluster}
	if got := phaseNames(f.Phases); !reflect.DeepEqual(got, want) {
		t.Errorf("phases %v, want %v", got, want)
	}
	if f.Name != "gpukit preflight" || len(f.Machines) != 2 {
		t.Errorf("%+v", f.Flow)
	}
	if _, err := engine.SelectPhases(f.Phases, nil, nil); err != nil {
		t.Errorf("the engine refuses the list: %v", err)
	}
}

func TestInitFlow(t *testing.T) {
	inv := &inventory.Inventory{Machines: []inventory.Machine{{Name: "a"}}}
	f := NewInit(inv, InitOptions{})
	want := []string{
		"preflight/facts", "preflight/checks", "preflight/cluster",
		"nvidia/prepare", "nvidia/driver", "nvidia/fabricmanager", "nvidia/persistenced", "nvidia/cuda",
		"nvidia/container-toolkit", "nvidia/reboot", "nvidia/verify",
	}
	if got := phaseNames(f.Phases); !reflect.DeepEqual(got, want) {
		t.Errorf("phases %v, want %v", got, want)
	}
	if _, err := engine.SelectPhases(f.Phases, []string{"nvidia"}, nil); err != nil {
		t.Errorf("--only-phases nvidia: %v", err)
	}
}

// A run stopped in preflight when a host failed in one of its phases, not
// in a later layer's.
func TestPreflightStopped(t *testing.T) {
	p := &Preflight{}
	for phase, want := range map[string]bool{preflight.PhaseFacts: true, preflight.PhaseChecks: true, preflight.PhaseCluster: true, "nvidia/driver": false, engine.ConnectPhase: false} {
		sum := &engine.Summary{Hosts: []engine.HostResult{{Host: "ok", Status: engine.StatusOK}, {Host: "bad", Status: engine.StatusFailed, Phase: phase}}}
		if got := p.Stopped(sum); got != want {
			t.Errorf("failed in %s: stopped in preflight %v, want %v", phase, got, want)
		}
	}
}
