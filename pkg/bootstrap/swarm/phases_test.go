package swarm_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpukit/gpukit/pkg/bootstrap/swarm"
	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/engine/enginetest"
	"github.com/gpukit/gpukit/pkg/event"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/ssh"
	"github.com/gpukit/gpukit/pkg/swarmapi"
)

// token is the canary: the join token must not show in any event.
const token = "SWMTKN-1-canary0123456789secret"

// fakeSwarm answers the swarm layer's scripts for a fleet of Debian hosts
// with docker.io: what was installed, written and joined, and the swarm's
// node list as its manager keeps it. A recording executor, for the phases'
// logic; the lab test (test/e2e) runs them on real dockerd.
type fakeSwarm struct {
	// managerJoins are manager joins in flight, managerJoinPeak their most.
	managerJoins, managerJoinPeak atomic.Int32

	mu       sync.Mutex
	gpus     map[string][]string // host -> UUIDs
	noDriver bool                // the GPUs are on the PCI bus, nvidia-smi lists none
	hosts    map[string]*fakeHost
	nodes    map[string]*fakeNode // node ID -> node
	// tasks are the task=/service= lines a manager prints of a host's node.
	tasks map[string]string
}

type fakeHost struct {
	installed   bool
	daemon, rt  string
	state, id   string
	manager     bool
	joinedToken string
	// remote overrides the managers the host knows (a host of another swarm).
	remote []map[string]string
}

type fakeNode struct {
	host   string
	role   string
	labels map[string]string
}

func newFakeSwarm(gpus map[string][]string) *fakeSwarm {
	return &fakeSwarm{gpus: gpus, hosts: map[string]*fakeHost{}, nodes: map[string]*fakeNode{}}
}

func (f *fakeSwarm) host(name string) *fakeHost {
	h := f.hosts[name]
	if h == nil {
		h = &fakeHost{state: "inactive", rt: "#swarm-resource = \"DOCKER_RESOURCE_GPU\"\n[nvidia-container-runtime]\n"}
		f.hosts[name] = h
	}
	return h
}

func nodeID(host string) string {
	return ("id" + strings.ReplaceAll(host, "-", "") + strings.Repeat("0", 25))[:25]
}

func (f *fakeSwarm) handle(_ context.Context, e *enginetest.Executor, cmd ssh.Command) (ssh.Result, error) {
	if cmd.Name == "join the swarm" && cmd.Args[0] == token+"-manager" {
		// A manager's join takes a moment, outside the lock: joins that
		// overlap show in the peak.
		n := f.managerJoins.Add(1)
		for peak := f.managerJoinPeak.Load(); n > peak && !f.managerJoinPeak.CompareAndSwap(peak, n); peak = f.managerJoinPeak.Load() {
		}
		time.Sleep(20 * time.Millisecond)
		f.managerJoins.Add(-1)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	h := f.host(e.Host)
	out := func(format string, a ...any) (ssh.Result, error) {
		return ssh.Result{Stdout: []byte(fmt.Sprintf(format, a...))}, nil
	}
	switch cmd.Name {
	case "probe facts":
		s := fmt.Sprintf("os.id=debian\nos.version=12\nhostname=%s\ninit=systemd\n", e.Host)
		for i, u := range f.gpus[e.Host] {
			s += fmt.Sprintf("pci.gpu=0000:0%d:00.0 0x2330\n", i+1)
			if !f.noDriver {
				s += fmt.Sprintf("nvidia_smi.gpu=%d, %s, NVIDIA H100 80GB HBM3, 81559, 580.95.05, Disabled, Enabled\n", i, u)
			}
		}
		return out("%s", s)
	case "read the docker state":
		var b strings.Builder
		if h.installed {
			fmt.Fprintf(&b, "package=docker.io 20.10.24+dfsg1-1+deb12u1 true\ndocker.active=active\n")
			m, _ := json.Marshal(map[string]any{"NodeID": h.id, "LocalNodeState": h.state, "ControlAvailable": h.manager,
				"RemoteManagers": f.remoteManagers(h)})
			fmt.Fprintf(&b, "swarm=%s\n", base64.StdEncoding.EncodeToString(m))
		}
		if h.daemon != "" {
			fmt.Fprintf(&b, "file /etc/docker/daemon.json=%s\n", base64.StdEncoding.EncodeToString([]byte(h.daemon)))
		}
		fmt.Fprintf(&b, "file /etc/nvidia-container-runtime/config.toml=%s\n", base64.StdEncoding.EncodeToString([]byte(h.rt)))
		return out("%s", b.String())
	case "install the docker engine":
		h.installed = true
		return out("")
	case "configure docker":
		h.daemon = cmd.Args[0]
		if cmd.Args[1] != "" {
			h.rt = cmd.Args[1]
		}
		return out("gpukit: docker restarted\n")
	case "create the swarm":
		h.state, h.id, h.manager = "active", nodeID(e.Host), true
		f.nodes[h.id] = &fakeNode{host: e.Host, role: "manager"}
		return out("gpukit: swarm created\nnode=%s\n", h.id)
	case "read the worker join token", "read the manager join token":
		if !h.manager {
			return ssh.Result{ExitCode: 1}, &ssh.ExitError{Command: cmd.Name, Code: 1}
		}
		if cmd.Args[0] == "manager" {
			return out("%s-manager\n", token) // Swarm's tokens say the role
		}
		return out("%s\n", token)
	case "join the swarm":
		role := "worker"
		switch cmd.Args[0] {
		case token:
		case token + "-manager":
			role = "manager"
		default:
			return ssh.Result{ExitCode: 1}, &ssh.ExitError{Command: cmd.Name, Code: 1, StderrTail: "invalid join token"}
		}
		// The script's own output never names the token; docker's goes to /dev/null.
		h.state, h.id, h.joinedToken, h.manager = "active", nodeID(e.Host), cmd.Args[0], role == "manager"
		f.nodes[h.id] = &fakeNode{host: e.Host, role: role}
		return out("gpukit: joined the swarm\nnode=%s\n", h.id)
	case "read the swarm's nodes":
		var list []map[string]any
		ids := make([]string, 0, len(f.nodes))
		for id := range f.nodes {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		for _, id := range ids {
			n := f.nodes[id]
			var res []map[string]any
			for _, u := range f.gpus[n.host] {
				res = append(res, map[string]any{"NamedResourceSpec": map[string]string{"Kind": "NVIDIA-GPU", "Value": u}})
			}
			list = append(list, map[string]any{"ID": id,
				"Spec":        map[string]any{"Role": n.role, "Availability": "active", "Labels": n.labels},
				"Description": map[string]any{"Hostname": n.host, "Resources": map[string]any{"GenericResources": res}},
				"Status":      map[string]any{"State": "ready"}})
		}
		b, _ := json.Marshal(list)
		return out("%s", b)
	case "read the nodes' tasks":
		var b strings.Builder
		for _, id := range cmd.Args {
			if n := f.nodes[id]; n != nil {
				b.WriteString(f.tasks[n.host])
			}
		}
		return out("%s", b.String())
	case "update swarm nodes":
		a := cmd.Args
		for len(a) > 0 {
			id := a[0]
			var n int
			fmt.Sscan(a[1], &n)
			opts := a[2 : 2+n]
			a = a[2+n:]
			node := f.nodes[id]
			if node.labels == nil {
				node.labels = map[string]string{}
			}
			for i := 0; i < len(opts); i += 2 {
				switch opts[i] {
				case "--label-add":
					k, v, _ := strings.Cut(opts[i+1], "=")
					node.labels[k] = v
				case "--label-rm":
					delete(node.labels, opts[i+1])
				case "--role":
					node.role = opts[i+1]
				}
			}
		}
		return out("")
	}
	return ssh.Result{ExitCode: 127}, &ssh.ExitError{Command: cmd.Name, Code: 127, StderrTail: "fake swarm: unexpected command"}
}

func (f *fakeSwarm) remoteManagers(h *fakeHost) []map[string]string {
	if h.state != "active" {
		return nil
	}
	if h.remote != nil {
		return h.remote
	}
	var out []map[string]string
	for id, n := range f.nodes {
		if n.role == "manager" {
			out = append(out, map[string]string{"NodeID": id, "Addr": "10.0.0.1:2377"})
		}
	}
	return out
}

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

func run(t *testing.T, machines []inventory.Machine, phases []engine.Phase, fake *fakeSwarm) (*engine.Summary, *enginetest.Fleet, *enginetest.Recorder) {
	t.Helper()
	fleet := &enginetest.Fleet{Handler: fake.handle}
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
	fake := newFakeSwarm(map[string][]string{"w1": {"GPU-w1a", "GPU-w1b"}, "w2": {"GPU-w2a"}, "w3": {"GPU-w3a"}})
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
	if err := json.Unmarshal([]byte(fake.hosts["w1"].daemon), &daemon); err != nil || daemon["default-runtime"] != "nvidia" ||
		fmt.Sprint(daemon["node-generic-resources"]) != "[NVIDIA-GPU=GPU-w1a NVIDIA-GPU=GPU-w1b]" {
		t.Errorf("w1 daemon.json: %s", fake.hosts["w1"].daemon)
	}
	if !strings.HasPrefix(fake.hosts["w1"].rt, `swarm-resource = "DOCKER_RESOURCE_NVIDIA-GPU"`) {
		t.Errorf("w1 runtime config: %q", fake.hosts["w1"].rt)
	}
	if fake.hosts["m1"].daemon != "" {
		t.Errorf("the GPU-less manager got a daemon.json: %s", fake.hosts["m1"].daemon)
	}
	w1 := fake.nodes[nodeID("w1")]
	if w1.labels["rack"] != "r1" || w1.labels[swarmapi.LabelGPUCount] != "2" || w1.labels[swarmapi.LabelCUDA] != "13.0" {
		t.Errorf("w1 labels: %v", w1.labels)
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
	if fake.nodes[nodeID("w3")].labels[swarmapi.LabelGPUCount] != "1" || fake.nodes[nodeID("w1")].labels["rack"] != "r1" {
		t.Errorf("labels after add-node: w3 %v, w1 %v", fake.nodes[nodeID("w3")].labels, fake.nodes[nodeID("w1")].labels)
	}
	assertNoToken(t, rec)
}

// A worker whose first manager failed is named with the reason; a host in
// another swarm is refused, not re-joined.
func TestSwarmJoinFailures(t *testing.T) {
	t.Parallel()
	inv := swarmInventory(t)
	fake := newFakeSwarm(nil)
	l := swarm.New(inv)
	fleet := &enginetest.Fleet{Handler: fake.handle, DialErr: map[string]error{"m1": fmt.Errorf("connection refused")}}
	r := &engine.Runner{Name: "test", Phases: []engine.Phase{l.Engine(), l.Runtime(), l.Init(), l.JoinWorkers()}}
	sum, _ := r.Run(context.Background(), inv.Machines[:2], fleet.Dial)
	f := sum.Failed()
	if len(f) != 2 || !strings.Contains(fmt.Sprint(f), "the first manager m1 is not ready") {
		t.Errorf("failed: %+v", f)
	}

	other := newFakeSwarm(nil)
	other.host("w1").installed, other.host("w1").state, other.host("w1").id = true, "active", nodeID("w1")
	other.host("w1").remote = []map[string]string{{"NodeID": "zzzzzzzzzzzzzzzzzzzzzzzzz", "Addr": "10.9.9.9:2377"}}
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
	fake := newFakeSwarm(nil)
	l := swarm.New(inv)
	sum, _, rec := run(t, inv.Machines, []engine.Phase{l.Engine(), l.Runtime(), l.Init(), l.JoinManagers(), l.JoinWorkers()}, fake)
	if c := sum.HostCounts(); c.Changed != 4 || c.Failed != 0 {
		t.Fatalf("%+v %+v", c, sum.Failed())
	}
	for h, role := range map[string]string{"m1": "manager", "m2": "manager", "m3": "manager", "w1": "worker"} {
		if n := fake.nodes[nodeID(h)]; n == nil || n.role != role {
			t.Errorf("%s: node %+v, want a %s", h, n, role)
		}
	}
	if peak := fake.managerJoinPeak.Load(); peak != 1 {
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
	fake := newFakeSwarm(map[string][]string{"w1": {"GPU-w1a"}})
	fake.noDriver = true
	l := swarm.New(inv)
	fleet := &enginetest.Fleet{Handler: fake.handle}
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
	fake := newFakeSwarm(map[string][]string{"w1": {"GPU-w1a"}})
	phases := func(inv *inventory.Inventory) []engine.Phase {
		l := swarm.New(inv)
		return []engine.Phase{l.Engine(), l.Runtime(), l.Init(), l.JoinManagers(), l.JoinWorkers(), l.Labels()}
	}
	if sum, _, _ := run(t, inv.Machines[:2], phases(inv), fake); sum.HostCounts().Failed != 0 {
		t.Fatalf("%+v", sum.Failed())
	}
	fake.tasks = map[string]string{"w1": `task={"ID":"t1","ServiceID":"s1","NodeID":"` + nodeID("w1") + `","Slot":0,"DesiredState":"complete","Status":{"State":"running"},` +
		`"GenericResources":[{"NamedResourceSpec":{"Kind":"NVIDIA-GPU","Value":"GPU-w1a"}}]}` + "\n" +
		`service={"ID":"s1","Spec":{"Name":"train","Mode":{"ReplicatedJob":{}}}}` + "\n"}
	inv.Machines[1].Labels = map[string]string{"rack": "r9"}
	sum, fleet, _ := run(t, inv.Machines[:2], phases(inv), fake)
	if c := sum.HostCounts(); c.Changed != 0 || c.Failed != 0 || len(writes(fleet)) != 0 {
		t.Fatalf("with a training task on w1: %+v %+v, writes %v", c, sum.Failed(), writes(fleet))
	}
	if r := sum.Hosts[0].Phases[len(sum.Hosts[0].Phases)-1]; !strings.Contains(r.Reason, "w1 left as it is: updating it would make swarm restart its GPU tasks (train."+nodeID("w1")+"): run init again once they are done") {
		t.Errorf("swarm/labels on m1: %+v", r)
	}
	// Finished, the job's task still holds the GPU in swarm's books.
	fake.tasks["w1"] = strings.Replace(fake.tasks["w1"], `"Status":{"State":"running"}`, `"Status":{"State":"complete"}`, 1)
	sum, fleet, _ = run(t, inv.Machines[:2], phases(inv), fake)
	if r := sum.Hosts[0].Phases[len(sum.Hosts[0].Phases)-1]; len(writes(fleet)) != 0 || !strings.Contains(r.Reason, "run its finished GPU jobs again (train): remove their services first") {
		t.Errorf("with w1's GPU job finished: writes %v, %+v", writes(fleet), r)
	}
	fake.tasks = nil
	if sum, fleet, _ := run(t, inv.Machines[:2], phases(inv), fake); sum.HostCounts().Changed != 1 || fake.nodes[nodeID("w1")].labels["rack"] != "r9" {
		t.Errorf("once the task is gone: %+v, writes %v, labels %v", sum.HostCounts(), writes(fleet), fake.nodes[nodeID("w1")].labels)
	}
}

// The inventory's roles win over the swarm's: a worker made a manager in
// the inventory is promoted on the next init.
func TestSwarmRolesFollowTheInventory(t *testing.T) {
	t.Parallel()
	inv := swarmInventory(t)
	fake := newFakeSwarm(nil)
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
	if n := fake.nodes[nodeID("w2")]; n.role != "manager" {
		t.Errorf("w2 is a %s", n.role)
	}
}
