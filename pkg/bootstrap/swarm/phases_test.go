package swarm_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/gpukit/gpukit/pkg/bootstrap/swarm"
	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/engine/enginetest"
	"github.com/gpukit/gpukit/pkg/event"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/swarmapi"
	"github.com/gpukit/gpukit/test/swarmsim"
)

// token is the canary: the join token must not show in any event.
const token = "SWMTKN-1-canary0123456789secret"

// newSwarm is a swarm whose hosts have gpus (UUIDs by host) and run driver
// 580.95.05, its join token the canary.
func newSwarm(gpus map[string][]string) *swarmsim.Swarm {
	return swarmsim.New(swarmsim.Options{Token: token, GPUs: gpus, Driver: "580.95.05"})
}

var nodeID = swarmsim.NodeID

func swarmInventory(t *testing.T) *inventory.Inventory {
	t.Helper()
	return swarmHosts(t, `
    - {name: m1, address: 10.0.0.1, roles: [manager]}
    - {name: w1, address: 10.0.0.2, roles: [worker], labels: {rack: r1}}
    - {name: w2, address: 10.0.0.3, roles: [worker]}
    - {name: w3, address: 10.0.0.4, roles: [worker]}`)
}

// swarmHosts is a swarm inventory of hosts (spec.hosts entries).
func swarmHosts(t *testing.T, hosts string) *inventory.Inventory {
	t.Helper()
	inv, err := inventory.Parse("inv.yaml", []byte("apiVersion: gpukit.dev/v1alpha1\nkind: Cluster\nmetadata: {name: s}\nspec:\n  orchestrator: swarm\n  hosts:"+hosts+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	return inv
}

func run(t *testing.T, machines []inventory.Machine, phases []engine.Phase, fake *swarmsim.Swarm) (*engine.Summary, *enginetest.Fleet, *enginetest.Recorder) {
	t.Helper()
	fleet := &enginetest.Fleet{Handler: fake.Handle}
	rec := &enginetest.Recorder{}
	r := &engine.Runner{Name: "test", Phases: phases, Sink: rec}
	sum, _ := r.Run(context.Background(), machines, fleet.Dial)
	return sum, fleet, rec
}

func writes(fleet *enginetest.Fleet) map[string][]string {
	out := map[string][]string{}
	for host, e := range fleet.Executors() {
		for _, n := range e.Names() {
			if !strings.HasPrefix(n, "read ") && n != "probe facts" {
				out[host] = append(out[host], n)
			}
		}
	}
	return out
}

// init's swarm phases form the swarm, advertise the GPUs, label the nodes
// and never let the join token into an event; a second run writes nothing;
// add-node's scoped phases touch the new host and the manager only.
func TestSwarmPhases(t *testing.T) {
	t.Parallel()
	inv := swarmInventory(t)
	fake := newSwarm(map[string][]string{"w1": {"GPU-w1a", "GPU-w1b"}, "w2": {"GPU-w2a"}, "w3": {"GPU-w3a"}})
	initPhases := func() []engine.Phase {
		l := swarm.New(inv)
		return []engine.Phase{l.Engine(), l.Runtime(), l.Init(), l.JoinManagers(), l.JoinWorkers(), l.Labels()}
	}
	three := inv.Machines[:3]
	sum, fleet, rec := run(t, three, initPhases(), fake)
	if c := sum.HostCounts(); c.Changed != 3 || c.Failed != 0 {
		t.Fatalf("first run: %+v %+v", c, sum.Failed())
	}
	got := writes(fleet)
	want := map[string][]string{
		"m1": {"install the docker engine", "create the swarm", "update swarm nodes"},
		"w1": {"install the docker engine", "configure docker", "join the swarm"},
		"w2": {"install the docker engine", "configure docker", "join the swarm"},
	}
	for h, w := range want {
		if !slices.Equal(got[h], w) {
			t.Errorf("%s wrote %v, want %v", h, got[h], w)
		}
	}
	var daemon map[string]any
	if err := json.Unmarshal([]byte(fake.Host("w1").DaemonJSON), &daemon); err != nil || daemon["default-runtime"] != "nvidia" ||
		fmt.Sprint(daemon["node-generic-resources"]) != "[NVIDIA-GPU=GPU-w1a NVIDIA-GPU=GPU-w1b]" {
		t.Errorf("w1 daemon.json: %s", fake.Host("w1").DaemonJSON)
	}
	if !strings.HasPrefix(fake.Host("w1").RuntimeConfig, `swarm-resource = "DOCKER_RESOURCE_NVIDIA-GPU"`) {
		t.Errorf("w1 runtime config: %q", fake.Host("w1").RuntimeConfig)
	}
	if fake.Host("m1").DaemonJSON != "" {
		t.Errorf("the GPU-less manager got a daemon.json: %s", fake.Host("m1").DaemonJSON)
	}
	w1 := fake.Node(nodeID("w1"))
	if w1.Labels["rack"] != "r1" || w1.Labels[swarmapi.LabelGPUCount] != "2" || w1.Labels[swarmapi.LabelCUDA] != "13.0" {
		t.Errorf("w1 labels: %v", w1.Labels)
	}
	assertNoToken(t, rec)

	sum, fleet, rec = run(t, three, initPhases(), fake)
	if c := sum.HostCounts(); c.Changed != 0 || c.Unchanged != 3 || len(writes(fleet)) != 0 {
		t.Fatalf("second run: %+v, writes %v", c, writes(fleet))
	}
	assertNoToken(t, rec)

	// add-node w3: its phases scoped to it; the manager lets it join and labels it.
	l := swarm.New(inv)
	only := []string{"w3"}
	phases := []engine.Phase{
		engine.Scoped{Phase: l.Engine(), Hosts: only}, engine.Scoped{Phase: l.Runtime(), Hosts: only},
		engine.Scoped{Phase: l.JoinWorkers(), Hosts: only}, l.Labels(only...),
	}
	sum, fleet, rec = run(t, []inventory.Machine{inv.Machines[3], inv.Machines[0]}, phases, fake)
	if c := sum.HostCounts(); c.Changed != 2 || c.Failed != 0 {
		t.Fatalf("add-node: %+v %+v", c, sum.Failed())
	}
	got = writes(fleet)
	if !slices.Equal(got["m1"], []string{"update swarm nodes"}) || !slices.Equal(got["w3"], []string{"install the docker engine", "configure docker", "join the swarm"}) {
		t.Errorf("add-node wrote %v", got)
	}
	if fleet.Dials("w1") != 0 || fleet.Dials("w2") != 0 {
		t.Errorf("add-node connected to other workers")
	}
	if fake.Node(nodeID("w3")).Labels[swarmapi.LabelGPUCount] != "1" || fake.Node(nodeID("w1")).Labels["rack"] != "r1" {
		t.Errorf("labels after add-node: w3 %v, w1 %v", fake.Node(nodeID("w3")).Labels, fake.Node(nodeID("w1")).Labels)
	}
	assertNoToken(t, rec)
}

// A worker whose first manager failed is named with the reason; a host in
// another swarm is refused, not re-joined.
func TestSwarmJoinFailures(t *testing.T) {
	t.Parallel()
	inv := swarmInventory(t)
	fake := newSwarm(nil)
	l := swarm.New(inv)
	fleet := &enginetest.Fleet{Handler: fake.Handle, DialErr: map[string]error{"m1": fmt.Errorf("connection refused")}}
	r := &engine.Runner{Name: "test", Phases: []engine.Phase{l.Engine(), l.Runtime(), l.Init(), l.JoinWorkers()}}
	sum, _ := r.Run(context.Background(), inv.Machines[:2], fleet.Dial)
	f := sum.Failed()
	if len(f) != 2 || !strings.Contains(fmt.Sprint(f), "the first manager m1 is not ready") {
		t.Errorf("failed: %+v", f)
	}

	other := newSwarm(nil)
	w1 := other.Host("w1")
	w1.Docker, w1.State, w1.NodeID = true, "active", nodeID("w1")
	w1.RemoteManagers = []swarmsim.Peer{{NodeID: "zzzzzzzzzzzzzzzzzzzzzzzzz", Addr: "10.9.9.9:2377"}}
	sum, fleet2, _ := run(t, inv.Machines[:2], []engine.Phase{swarm.New(inv).Engine(), swarm.New(inv).Init(), func() engine.Phase {
		return swarm.New(inv).JoinWorkers()
	}()}, other)
	f = sum.Failed()
	if len(f) != 1 || f[0].Host != "w1" || !strings.Contains(f[0].Err.Error(), "w1 is in another swarm") {
		t.Errorf("failed: %+v", f)
	}
	if slices.Contains(fleet2.Executor("w1").Names(), "join the swarm") {
		t.Error("a host of another swarm was joined")
	}
}

func assertNoToken(t *testing.T, rec *enginetest.Recorder) {
	t.Helper()
	for _, e := range rec.Events() {
		b, _ := json.Marshal(e)
		if strings.Contains(string(b), token) || strings.Contains(string(b), "canary0123") {
			t.Fatalf("the join token is in an event: %s", b)
		}
	}
	if len(rec.OfType(event.StepStart)) == 0 {
		t.Fatal("no events recorded")
	}
}

// Other managers join with the manager token, one at a time, before the
// workers.
func TestSwarmManagersJoinFirst(t *testing.T) {
	t.Parallel()
	inv := swarmHosts(t, `
    - {name: m1, address: 10.0.0.1, roles: [manager]}
    - {name: m2, address: 10.0.0.2, roles: [manager]}
    - {name: m3, address: 10.0.0.3, roles: [manager]}
    - {name: w1, address: 10.0.0.4, roles: [worker]}`)
	fake := newSwarm(nil)
	l := swarm.New(inv)
	sum, _, rec := run(t, inv.Machines, []engine.Phase{l.Engine(), l.Runtime(), l.Init(), l.JoinManagers(), l.JoinWorkers()}, fake)
	if c := sum.HostCounts(); c.Changed != 4 || c.Failed != 0 {
		t.Fatalf("%+v %+v", c, sum.Failed())
	}
	for h, role := range map[string]string{"m1": "manager", "m2": "manager", "m3": "manager", "w1": "worker"} {
		if n := fake.Node(nodeID(h)); n == nil || n.Role != role {
			t.Errorf("%s: node %+v, want a %s", h, n, role)
		}
	}
	if peak := fake.ManagerJoinPeak(); peak != 1 {
		t.Errorf("%d managers joined at once, want 1 at a time", peak)
	}
	assertNoToken(t, rec)
}

// A plan of a fresh cluster reads and writes nothing, plans the engine,
// the swarm and the joins (with a stand-in for the token, which does not
// exist yet), and says the GPUs are advertised once the driver lists them.
func TestSwarmPlan(t *testing.T) {
	t.Parallel()
	inv := swarmInventory(t)
	// The GPUs are on the PCI bus; no driver lists them yet.
	fake := swarmsim.New(swarmsim.Options{Token: token, GPUs: map[string][]string{"w1": {"GPU-w1a"}}})
	l := swarm.New(inv)
	fleet := &enginetest.Fleet{Handler: fake.Handle}
	rec := &enginetest.Recorder{}
	r := &engine.Runner{Name: "plan", DryRun: true, Sink: rec,
		Phases: []engine.Phase{l.Engine(), l.Runtime(), l.Init(), l.JoinManagers(), l.JoinWorkers(), l.Labels()}}
	sum, err := r.Run(context.Background(), inv.Machines[:2], fleet.Dial)
	if err != nil || sum.HostCounts().Failed != 0 {
		t.Fatalf("%v %+v", err, sum.Failed())
	}
	if w := writes(fleet); len(w) != 0 {
		t.Errorf("a plan ran writes: %v", w)
	}
	planned := map[string]string{}
	for _, e := range rec.OfType(event.Planned) {
		planned[e.Host+" "+e.Phase] = e.Script
	}
	for _, k := range []string{"m1 swarm/engine", "w1 swarm/engine", "m1 swarm/init", "w1 swarm/join-workers"} {
		if _, ok := planned[k]; !ok {
			t.Errorf("not planned: %s (planned: %v)", k, slices.Sorted(maps.Keys(planned)))
		}
	}
	if !strings.Contains(planned["w1 swarm/join-workers"], "<worker join token of m1>") {
		t.Errorf("join plan: %s", planned["w1 swarm/join-workers"])
	}
	var why string
	for _, e := range rec.OfType(event.HostSkipped) {
		if e.Host == "w1" && e.Phase == swarm.PhaseRuntime {
			why = e.Message
		}
	}
	if !strings.Contains(why, "advertised once the driver lists them") {
		t.Errorf("w1's runtime phase: skipped with %q, want the GPUs said to be advertised after the driver", why)
	}
}

// A node whose labels change is not updated while tasks hold its GPUs
// (swarm would reject them, and a training run would start over): init
// says so and updates it once they are gone.
func TestSwarmLabelsWaitForGPUTasks(t *testing.T) {
	t.Parallel()
	inv := swarmInventory(t)
	fake := newSwarm(map[string][]string{"w1": {"GPU-w1a"}})
	phases := func(inv *inventory.Inventory) []engine.Phase {
		l := swarm.New(inv)
		return []engine.Phase{l.Engine(), l.Runtime(), l.Init(), l.JoinManagers(), l.JoinWorkers(), l.Labels()}
	}
	if sum, _, _ := run(t, inv.Machines[:2], phases(inv), fake); sum.HostCounts().Failed != 0 {
		t.Fatalf("%+v", sum.Failed())
	}
	train := &swarmsim.Task{ID: "t1", Node: nodeID("w1"), Service: "train", Mode: "replicated-job", State: "running", DesiredState: "complete", GPUs: []string{"GPU-w1a"}}
	fake.Tasks = []*swarmsim.Task{train}
	inv.Machines[1].Labels = map[string]string{"rack": "r9"}
	sum, fleet, _ := run(t, inv.Machines[:2], phases(inv), fake)
	if c := sum.HostCounts(); c.Changed != 0 || c.Failed != 0 || len(writes(fleet)) != 0 {
		t.Fatalf("with a training task on w1: %+v %+v, writes %v", c, sum.Failed(), writes(fleet))
	}
	if r := sum.Hosts[0].Phases[len(sum.Hosts[0].Phases)-1]; !strings.Contains(r.Reason, "w1 left as it is: updating it would make swarm restart its GPU tasks (train."+nodeID("w1")+"): run init again once they are done") {
		t.Errorf("swarm/labels on m1: %+v", r)
	}
	// Finished, the job's task still holds the GPU in swarm's books.
	train.State = "complete"
	sum, fleet, _ = run(t, inv.Machines[:2], phases(inv), fake)
	if r := sum.Hosts[0].Phases[len(sum.Hosts[0].Phases)-1]; len(writes(fleet)) != 0 || !strings.Contains(r.Reason, "run its finished GPU jobs again (train): remove their services first") {
		t.Errorf("with w1's GPU job finished: writes %v, %+v", writes(fleet), r)
	}
	fake.Tasks = nil
	if sum, fleet, _ := run(t, inv.Machines[:2], phases(inv), fake); sum.HostCounts().Changed != 1 || fake.Node(nodeID("w1")).Labels["rack"] != "r9" {
		t.Errorf("once the task is gone: %+v, writes %v, labels %v", sum.HostCounts(), writes(fleet), fake.Node(nodeID("w1")).Labels)
	}
}

// The inventory's roles win over the swarm's: a worker made a manager in
// the inventory is promoted on the next init.
func TestSwarmRolesFollowTheInventory(t *testing.T) {
	t.Parallel()
	inv := swarmInventory(t)
	fake := newSwarm(nil)
	phases := func(inv *inventory.Inventory) []engine.Phase {
		l := swarm.New(inv)
		return []engine.Phase{l.Engine(), l.Runtime(), l.Init(), l.JoinManagers(), l.JoinWorkers(), l.Labels()}
	}
	if sum, _, _ := run(t, inv.Machines[:3], phases(inv), fake); sum.HostCounts().Failed != 0 {
		t.Fatalf("%+v", sum.Failed())
	}
	inv.Machines[2].Roles = []inventory.Role{inventory.RoleManager} // w2
	sum, fleet, _ := run(t, inv.Machines[:3], phases(inv), fake)
	if c := sum.HostCounts(); c.Changed != 1 || c.Failed != 0 {
		t.Fatalf("%+v %+v", c, sum.Failed())
	}
	if got := writes(fleet); !slices.Equal(got["m1"], []string{"update swarm nodes"}) || len(got) != 1 {
		t.Errorf("writes %v", got)
	}
	if n := fake.Node(nodeID("w2")); n.Role != "manager" {
		t.Errorf("w2 is a %s", n.Role)
	}
}

// A plain-HTTP registry mirror: every host's docker is told to reach it
// without TLS (a swarm's services name the mirror's images by its own
// names), the GPU-less manager too; a second run writes nothing.
func TestSwarmRegistryMirror(t *testing.T) {
	t.Parallel()
	inv, err := inventory.Parse("inv.yaml", []byte(`apiVersion: gpukit.dev/v1alpha1
kind: Cluster
metadata: {name: s}
spec:
  orchestrator: swarm
  mirrors: {registry: "http://10.0.0.9:5000/mirror"}
  hosts:
    - {name: m1, address: 10.0.0.1, roles: [manager]}
    - {name: w1, address: 10.0.0.2, roles: [worker]}
`))
	if err != nil {
		t.Fatal(err)
	}
	fake := newSwarm(map[string][]string{"w1": {"GPU-w1a"}})
	phases := func() []engine.Phase { l := swarm.New(inv); return []engine.Phase{l.Engine(), l.Runtime()} }
	sum, _, _ := run(t, inv.Machines, phases(), fake)
	if c := sum.HostCounts(); c.Changed != 2 || c.Failed != 0 {
		t.Fatalf("first run: %+v %+v", c, sum.Failed())
	}
	for _, h := range []string{"m1", "w1"} {
		var daemon struct {
			Insecure []string `json:"insecure-registries"`
		}
		if err := json.Unmarshal([]byte(fake.Host(h).DaemonJSON), &daemon); err != nil || !slices.Equal(daemon.Insecure, []string{"10.0.0.9:5000"}) {
			t.Errorf("%s daemon.json: %s", h, fake.Host(h).DaemonJSON)
		}
	}
	if sum, fleet, _ := run(t, inv.Machines, phases(), fake); sum.HostCounts().Changed != 0 || len(writes(fleet)) != 0 {
		t.Errorf("second run: %+v, writes %v", sum.HostCounts(), writes(fleet))
	}
}
