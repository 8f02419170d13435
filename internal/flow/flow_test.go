package flow

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/gpukit/gpukit/internal/connect"
	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/engine/enginetest"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/preflight"
	"github.com/gpukit/gpukit/pkg/ssh"
	"github.com/gpukit/gpukit/pkg/ui"
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
	f, err := NewPreflight(inv, nil)
	if err != nil {
		t.Fatal(err)
	}
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

// --hosts: the run reaches the named hosts only; every unknown name is
// said at once.
func TestPreflightHosts(t *testing.T) {
	inv := &inventory.Inventory{Machines: []inventory.Machine{{Name: "a"}, {Name: "b"}, {Name: "c"}}}
	for _, tc := range []struct {
		names []string
		want  []string
		err   string
	}{
		{nil, []string{"a", "b", "c"}, ""},
		{[]string{"c", "a"}, []string{"c", "a"}, ""},
		{[]string{"a", "x"}, nil, "x is not in the inventory"},
		{[]string{"x", "b", "y\x1b"}, nil, `x, "y\x1b" are not in the inventory`},
		{[]string{"a", "a"}, nil, "a is named twice"},
	} {
		f, err := NewPreflight(inv, tc.names)
		switch {
		case tc.err != "" && (err == nil || err.Error() != tc.err):
			t.Errorf("%q: %v, want %q", tc.names, err, tc.err)
		case tc.err == "" && (err != nil || !reflect.DeepEqual(machineNames(f.Machines), tc.want)):
			t.Errorf("%q: %v", tc.names, err)
		}
	}
}

func TestInitFlow(t *testing.T) {
	inv := &inventory.Inventory{Machines: []inventory.Machine{{Name: "a"}}}
	f := NewInit(inv, InitOptions{})
	want := []string{
		"preflight/facts", "preflight/checks", "preflight/cluster", "host/proxy",
		"nvidia/prepare", "nvidia/driver", "nvidia/fabricmanager", "nvidia/persistenced", "nvidia/cuda",
		"nvidia/container-toolkit", "nvidia/reboot", "nvidia/verify", "nvidia/mig",
	}
	if got := phaseNames(f.Phases); !reflect.DeepEqual(got, want) {
		t.Errorf("phases %v, want %v", got, want)
	}
	if _, err := engine.SelectPhases(f.Phases, []string{"nvidia"}, nil); err != nil {
		t.Errorf("--only-phases nvidia: %v", err)
	}
}

// A run stopped in preflight when a host failed in one of its phases, not
// in a later layer's; init's and add-node's results say so.
func TestPreflightStopped(t *testing.T) {
	p := &Preflight{}
	for phase, want := range map[string]bool{preflight.PhaseFacts: true, preflight.PhaseChecks: true, preflight.PhaseCluster: true, "nvidia/driver": false, engine.ConnectPhase: false} {
		sum := &engine.Summary{Hosts: []engine.HostResult{{Host: "ok", Status: engine.StatusOK}, {Host: "bad", Status: engine.StatusFailed, Phase: phase}}}
		if got := p.Stopped(sum); got != want {
			t.Errorf("failed in %s: stopped in preflight %v, want %v", phase, got, want)
		}
		res := p.InitResult(sum, phase == engine.ConnectPhase, true)
		wantKind := KindInit
		if phase == engine.ConnectPhase {
			wantKind = KindAddNode
		}
		if res.Stopped != want || res.Type != wantKind || !res.DryRun || res.Hosts.Failed != 1 {
			t.Errorf("failed in %s: result %+v", phase, res)
		}
	}
}

// echoPhase reads each host once.
type echoPhase struct{}

func (echoPhase) Name() string  { return "test/echo" }
func (echoPhase) Title() string { return "Echo" }
func (echoPhase) Run(ctx context.Context, h *engine.Host) error {
	_, err := h.Run(ctx, "echo", ssh.Command{Name: "echo", Script: "echo"})
	return err
}

// display records that Run opened and closed it, and the events between.
type display struct {
	enginetest.Recorder
	opened, closed int
}

func (d *display) Close() error { d.closed++; return nil }

// Run refuses bad input before it contacts a host, showing nothing, and a
// flow that works through the API from this machine reaches no host.
func TestRun(t *testing.T) {
	inv, err := inventory.Parse("c.yaml", []byte("apiVersion: gpukit.dev/v1alpha1\nkind: Cluster\nmetadata: {name: lab}\nspec:\n  ssh:\n    user: ops\n"+
		"    password: {env: GPUKIT_TEST_UNSET_PASSWORD}\n  hosts:\n  - {name: cp-1, address: 127.0.0.2, roles: [control-plane]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	phases := []engine.Phase{echoPhase{}}
	local := Flow{Name: "local", Machines: []inventory.Machine{{Name: "prod", Address: "127.0.0.1"}}, Phases: phases, local: true}
	for _, tc := range []struct {
		name  string
		f     Flow
		o     RunOptions
		input bool   // bad input: an *InputError, no event shown
		want  string // the error, or the host's
	}{
		{"an unknown phase", local, RunOptions{Only: []string{"test/nope"}}, true, "unknown phase"},
		{"a secret that cannot be read", Flow{Name: "ssh", Machines: inv.Machines, Phases: phases}, RunOptions{}, true, "GPUKIT_TEST_UNSET_PASSWORD"},
		{"a log directory that cannot be made", local, RunOptions{LogDir: "/proc/gpukit-test/logs"}, true, "/proc/gpukit-test"},
		{"through the API only", local, RunOptions{}, false, "prod: no host to run commands on (--kubeconfig)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &display{}
			tc.o.Secrets = connect.Secrets{LookupEnv: func(string) (string, bool) { return "", false }, ReadFile: os.ReadFile}
			tc.o.Display = func(context.CancelFunc) ui.Display { d.opened++; return d }
			sum, err := Run(context.Background(), inv, tc.f, tc.o)
			var ie *InputError
			if errors.As(err, &ie) != tc.input || (sum == nil) != tc.input {
				t.Fatalf("bad input %v, summary %v: %v", errors.As(err, &ie), sum != nil, err)
			}
			if tc.input {
				if !strings.Contains(err.Error(), tc.want) || d.opened != d.closed || d.opened > 0 && len(d.Events()) > 0 {
					t.Errorf("%v; display opened %d, closed %d, %d events", err, d.opened, d.closed, len(d.Events()))
				}
				return
			}
			if d.opened != 1 || d.closed != 1 || len(sum.Failed()) != 1 || !strings.Contains(sum.Failed()[0].Err.Error(), tc.want) {
				t.Errorf("display opened %d, closed %d; %+v: %v", d.opened, d.closed, sum.Hosts, err)
			}
		})
	}
}

// --list-phases builds the command's flow for the inventory given, else for
// the example; an inventory or a flow that cannot be is bad input.
func TestList(t *testing.T) {
	dir := t.TempDir()
	swarm := filepath.Join(dir, "swarm.yaml")
	doc := "apiVersion: gpukit.dev/v1alpha1\nkind: Cluster\nmetadata: {name: sw}\nspec:\n  orchestrator: swarm\n  hosts:\n  - {name: m-1, address: 10.0.0.1, roles: [manager]}\n"
	if err := os.WriteFile(swarm, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	build := func(inv *inventory.Inventory) (Flow, error) {
		f, err := NewPreflight(inv, nil)
		if err != nil {
			return Flow{}, err
		}
		return f.Flow, nil
	}
	for _, tc := range []struct {
		name, file string
		build      func(*inventory.Inventory) (Flow, error)
		want       inventory.Orchestrator
		err        string
	}{
		{"the example", "", build, inventory.Kubernetes, ""},
		{"a file", swarm, build, inventory.Swarm, ""},
		{"a missing file", filepath.Join(dir, "missing.yaml"), build, "", "read inventory"},
		{"a flow the inventory cannot have", swarm, func(*inventory.Inventory) (Flow, error) { return Flow{}, errors.New("no control plane") }, "", "no control plane"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := List(tc.file, inventory.Overrides{}, tc.build)
			var ie *InputError
			switch {
			case tc.err != "" && (!errors.As(err, &ie) || !strings.Contains(err.Error(), tc.err)):
				t.Errorf("%v, want bad input: %s", err, tc.err)
			case tc.err == "" && (err != nil || l.File != tc.file || l.Orchestrator != tc.want || l.Result().Command != "gpukit preflight" || len(l.Result().Phases) != 3):
				t.Errorf("%+v: %v", l, err)
			}
		})
	}
}
