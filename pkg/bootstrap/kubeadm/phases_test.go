package kubeadm_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpukit/gpukit/pkg/bootstrap/kubeadm"
	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/engine/enginetest"
	"github.com/gpukit/gpukit/pkg/event"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/ssh"
	"github.com/gpukit/gpukit/test/gpusim/scriptsim"
)

// token is the canary: neither the bootstrap token nor the certificate key
// may show in any event.
const token = "abcdef.canary0123456789"

// fakeKube answers the Kubernetes layer's scripts for a fleet of Debian
// hosts: what was prepared, installed, written, initialised and joined. A
// recording executor, for the phases' logic; TestLabKubernetes
// (test/e2e) runs them on real hosts.
type fakeKube struct {
	// cpJoins are control-plane joins in flight, cpJoinPeak their most.
	cpJoins, cpJoinPeak atomic.Int32

	mu sync.Mutex
	// machines are the GPU hosts as the GPU simulator models them (their
	// facts); the others have no GPU.
	machines map[string]*scriptsim.Host
	hosts    map[string]*fakeKubeHost
	keys     []string // certificate keys the control plane received
}

type fakeKubeHost struct {
	prepared, packages, containerd bool
	files                          map[string]string
	server                         string // the kubelet's API
	apiserver                      bool
	deleted                        bool   // drained and deleted from the API
	config                         string // kubeadm's configuration, as sent
}

// newFakeKube is a fleet whose hosts gpus have an H100 each (UUID GPU-host)
// at driver 580.95.05.
func newFakeKube(gpus ...string) *fakeKube {
	f := &fakeKube{machines: map[string]*scriptsim.Host{}, hosts: map[string]*fakeKubeHost{}}
	for _, g := range gpus {
		m := scriptsim.Installed("580.95.05", 1)
		m.UUIDs = []string{"GPU-" + g}
		f.machines[g] = &m
	}
	return f
}

func (f *fakeKube) host(name string) *fakeKubeHost {
	h := f.hosts[name]
	if h == nil {
		h = &fakeKubeHost{files: map[string]string{}}
		f.hosts[name] = h
	}
	return h
}

func (f *fakeKube) handle(_ context.Context, e *enginetest.Executor, cmd ssh.Command) (ssh.Result, error) {
	if cmd.Name == "kubeadm join" && strings.Contains(cmd.Args[0], "certificateKey") {
		n := f.cpJoins.Add(1)
		for peak := f.cpJoinPeak.Load(); n > peak && !f.cpJoinPeak.CompareAndSwap(peak, n); peak = f.cpJoinPeak.Load() {
		}
		time.Sleep(20 * time.Millisecond)
		f.cpJoins.Add(-1)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	h := f.host(e.Host)
	out := func(format string, a ...any) (ssh.Result, error) {
		return ssh.Result{Stdout: []byte(fmt.Sprintf(format, a...))}, nil
	}
	fail := func(msg string) (ssh.Result, error) {
		return ssh.Result{ExitCode: 1}, &ssh.ExitError{Command: cmd.Name, Code: 1, StderrTail: msg}
	}
	switch cmd.Name {
	case "probe facts":
		m := f.machines[e.Host]
		if m == nil {
			cpu := scriptsim.CPU()
			m = &cpu
		}
		return m.Run(e.Host, cmd)
	case "read what the kubelet still lacks":
		if h.prepared {
			return out("")
		}
		return out("pending: swap turned off\npending: br_netfilter loaded\n")
	case "prepare for the kubelet":
		h.prepared = true
		return out("gpukit: swap turned off\n")
	case "read the kubernetes state":
		var b strings.Builder
		if h.packages {
			b.WriteString("package=kubeadm 1.37.2-1.1 true\npackage=kubelet 1.37.2-1.1 true\npackage=kubectl 1.37.2-1.1 true\npackage=cri-tools 1.37.0-1.1 true\nkubelet.enabled=enabled\n")
			b.WriteString("pause.image=registry.k8s.io/pause:3.10.1\n")
		}
		if h.containerd {
			b.WriteString("package=containerd.io 2.3.1-1~debian.12~bookworm true\npackage=containernetworking-plugins 1.1.1+ds1-3+b17 true\ncontainerd.version=v2.3.1\ncontainerd.active=active\n")
		} else {
			b.WriteString("cni.missing=bridge\n")
		}
		for p, c := range h.files {
			fmt.Fprintf(&b, "file %s=%s\n", p, base64.StdEncoding.EncodeToString([]byte(c)))
		}
		if h.apiserver {
			b.WriteString("apiserver=true\n")
		}
		if h.server != "" {
			fmt.Fprintf(&b, "kubelet.server=%s\n", h.server)
		}
		return out("%s", b.String())
	case "install kubeadm, kubelet and kubectl":
		h.packages = true
		return out("gpukit: kubeadm v1.37.2\n")
	case "install containerd":
		h.containerd = true
		return out("gpukit: containerd v2.3.1\n")
	case "configure containerd":
		h.files[kubeadm.ContainerdConfigFile] = strings.TrimRight(cmd.Args[0], "\n")
		for i := 1; i+1 < len(cmd.Args); i += 2 {
			h.files[cmd.Args[i]] = strings.TrimRight(cmd.Args[i+1], "\n")
		}
		return out("")
	case "kubeadm init":
		if !h.containerd || !h.packages || !h.prepared {
			return fail("kubeadm init before its prerequisites")
		}
		h.apiserver, h.server, h.config = true, "https://"+endpointOf(cmd.Args[0]), cmd.Args[0]
		return out("gpukit: kubeadm init done\n")
	case "create a join token":
		if !h.apiserver {
			return fail("no control plane here")
		}
		if len(cmd.Args) != 0 {
			return fail("a secret passed as an argument")
		}
		key := ""
		if strings.Contains(cmd.Script, "upload-certs") { // kubeadm makes the key
			key = fmt.Sprintf("certificate-key=%064x\n", len(f.keys)+0xc0ffee)
			f.keys = append(f.keys, strings.TrimSpace(strings.TrimPrefix(key, "certificate-key=")))
		}
		return out("%skubeadm join lb.example.com:6443 --token %s --discovery-token-ca-cert-hash sha256:0123abcd \n", key, token)
	case "kubeadm join":
		if !h.containerd || !h.packages || !h.prepared {
			return fail("kubeadm join before its prerequisites")
		}
		if !strings.Contains(cmd.Args[0], "token: "+token) {
			return fail("invalid token")
		}
		h.server, h.config = "https://"+endpointOf(cmd.Args[0]), cmd.Args[0]
		h.apiserver = strings.Contains(cmd.Args[0], "certificateKey")
		if h.apiserver {
			// kubeadm 1.37 points a joined control plane's kubelet at its
			// own API server.
			h.server = "https://" + valueOf(cmd.Args[0], "advertiseAddress: ") + ":6443"
		}
		return out("gpukit: joined\n")
	case "read the cluster's nodes":
		if !h.apiserver {
			return fail("no control plane here")
		}
		var names []string
		for name, o := range f.hosts {
			if o.server != "" && !o.deleted {
				names = append(names, name)
			}
		}
		slices.Sort(names)
		return out("%s\n", strings.Join(names, "\n"))
	case "drain and delete nodes":
		for _, n := range cmd.Args {
			f.host(n).deleted = true
		}
		return out("")
	case "read what a reset would undo":
		if h.server != "" || h.apiserver || len(h.files) > 0 {
			return out("pending: kubeadm reset\n")
		}
		return out("")
	case "reset the kubernetes node":
		h.server, h.apiserver, h.files, h.deleted = "", false, map[string]string{}, false
		return out("gpukit: kubeadm reset\n")
	case "read the admin kubeconfig":
		return out("apiVersion: v1\nclusters:\n- cluster:\n    server: %s\n  name: c\nusers:\n- name: admin\n  user: {client-key-data: c2VjcmV0}\n", h.server)
	}
	return ssh.Result{ExitCode: 127}, &ssh.ExitError{Command: cmd.Name, Code: 127, StderrTail: "fake kube: unexpected command"}
}

// valueOf finds key's value in a kubeadm configuration.
func valueOf(config, key string) string {
	for _, line := range strings.Split(config, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), key); ok {
			return v
		}
	}
	return "?"
}

// endpointOf finds the API endpoint in a kubeadm configuration.
func endpointOf(config string) string {
	for _, line := range strings.Split(config, "\n") {
		for _, key := range []string{"controlPlaneEndpoint: ", "apiServerEndpoint: "} {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), key); ok {
				return v
			}
		}
	}
	return "?"
}

func kubeInventory(t *testing.T, extra, hosts string) *inventory.Inventory {
	t.Helper()
	inv, err := inventory.Parse("inv.yaml", []byte("apiVersion: gpukit.dev/v1alpha1\nkind: Cluster\nmetadata: {name: k}\nspec:\n"+extra+"  hosts:"+hosts+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	return inv
}

const haHosts = `
    - {name: cp1, address: 10.0.0.1, roles: [control-plane]}
    - {name: cp2, address: 10.0.0.2, roles: [control-plane]}
    - {name: cp3, address: 10.0.0.3, roles: [control-plane]}
    - {name: w1, address: 10.0.0.11, roles: [worker]}
    - {name: w2, address: 10.0.0.12, roles: [worker]}`

const haSpec = `  kubernetes: {controlPlaneEndpoint: lb.example.com}
  mirrors: {registry: "http://10.9.9.9:5000/mirror"}
`

func allPhases(l *kubeadm.Layer) []engine.Phase {
	return []engine.Phase{l.Prepare(), l.Packages(), l.Containerd(), l.Init(), l.JoinControlPlanes(), l.JoinWorkers(), l.FetchKubeconfig()}
}

func runKube(t *testing.T, machines []inventory.Machine, phases []engine.Phase, fake *fakeKube, dryRun bool) (*engine.Summary, *enginetest.Fleet, *enginetest.Recorder) {
	t.Helper()
	fleet := &enginetest.Fleet{Handler: fake.handle}
	rec := &enginetest.Recorder{}
	r := &engine.Runner{Name: "test", Phases: phases, Sink: rec, DryRun: dryRun}
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

func assertNoSecret(t *testing.T, rec *enginetest.Recorder, secrets ...string) {
	t.Helper()
	for _, e := range rec.Events() {
		b, _ := json.Marshal(e)
		for _, s := range append(secrets, token, "canary0123") {
			if strings.Contains(string(b), s) {
				t.Fatalf("a secret is in an event: %s", b)
			}
		}
	}
	if len(rec.OfType(event.StepStart)) == 0 {
		t.Fatal("no events recorded")
	}
}

// init's Kubernetes phases on an HA cluster: every host prepared, its
// packages and containerd installed and configured (the NVIDIA runtime the
// default on GPU hosts only, the registry mirror's hosts.toml files),
// kubeadm init on the first control plane, the other control planes joined
// one at a time with a certificate key made for the run, the workers with
// the same short-lived token; neither secret in any event; the admin
// kubeconfig fetched; a second run writes nothing.
func TestKubernetesPhases(t *testing.T) {
	t.Parallel()
	inv := kubeInventory(t, haSpec, haHosts)
	fake := newFakeKube("w1", "w2")
	l := kubeadm.New(inv)
	sum, fleet, rec := runKube(t, inv.Machines, allPhases(l), fake, false)
	if c := sum.HostCounts(); c.Changed != 5 || c.Failed != 0 {
		t.Fatalf("first run: %+v %+v", c, sum.Failed())
	}
	base := []string{"prepare for the kubelet", "install kubeadm, kubelet and kubectl", "install containerd", "configure containerd"}
	want := map[string][]string{
		"cp1": append(slices.Clone(base), "kubeadm init", "create a join token", "create a join token"), // control planes', workers'

		"cp2": append(slices.Clone(base), "kubeadm join"),
		"w1":  append(slices.Clone(base), "kubeadm join"),
	}
	got := writes(fleet)
	for h, w := range want {
		if !slices.Equal(got[h], w) {
			t.Errorf("%s wrote %v, want %v", h, got[h], w)
		}
	}
	if p := fake.cpJoinPeak.Load(); p != 1 {
		t.Errorf("%d control planes joined at once, want 1", p)
	}
	if len(fake.keys) != 1 || len(fake.keys[0]) != 64 {
		t.Errorf("certificate keys uploaded: %v", fake.keys)
	}
	for h, runtime := range map[string]string{"cp1": "runc", "w1": "nvidia"} {
		if c := fake.hosts[h].files[kubeadm.ContainerdConfigFile]; !strings.Contains(c, `default_runtime_name = "`+runtime+`"`) ||
			!strings.Contains(c, `sandbox = "registry.k8s.io/pause:3.10.1"`) || !strings.Contains(c, "SystemdCgroup = true") {
			t.Errorf("%s config.toml:\n%s", h, c)
		}
	}
	if hosts := fake.hosts["w2"].files["/etc/containerd/certs.d/docker.io/hosts.toml"]; !strings.Contains(hosts, `[host."http://10.9.9.9:5000/v2/mirror/docker.io"]`) {
		t.Errorf("w2 docker.io hosts.toml: %q", hosts)
	}
	for _, h := range []string{"cp2", "cp3"} {
		if c := fake.hosts[h].config; !strings.Contains(c, "certificateKey: "+fake.keys[0]) || !strings.Contains(c, "advertiseAddress: 10.0.0.") {
			t.Errorf("%s joined with:\n%s", h, c)
		}
	}
	if c := fake.hosts["cp1"].config; !strings.Contains(c, "controlPlaneEndpoint: lb.example.com:6443") {
		t.Errorf("cp1's init configuration:\n%s", c)
	}
	if kc := string(l.Kubeconfig()); !strings.Contains(kc, "server: https://lb.example.com:6443") {
		t.Errorf("kubeconfig: %q", kc)
	}
	assertNoSecret(t, rec, fake.keys...)

	l = kubeadm.New(inv)
	sum, fleet, rec = runKube(t, inv.Machines, allPhases(l), fake, false)
	if c := sum.HostCounts(); c.Changed != 0 || c.Unchanged != 5 || len(writes(fleet)) != 0 {
		t.Fatalf("second run: %+v, writes %v, failed %v", c, writes(fleet), sum.Failed())
	}
	if fleet.Executor("cp1") != nil && slices.Contains(fleet.Executor("cp1").Names(), "create a join token") {
		t.Error("a token was made although every node had joined")
	}
	if l.Kubeconfig() == nil {
		t.Error("the second run fetched no kubeconfig")
	}
	assertNoSecret(t, rec)
}

// A plan writes nothing and shows the joins with stand-ins for the secrets.
func TestKubernetesPlan(t *testing.T) {
	t.Parallel()
	inv := kubeInventory(t, haSpec, haHosts)
	fake := newFakeKube("w1", "w2")
	sum, fleet, rec := runKube(t, inv.Machines, allPhases(kubeadm.New(inv)), fake, true)
	if c := sum.HostCounts(); c.Failed != 0 {
		t.Fatalf("plan: %+v %+v", c, sum.Failed())
	}
	if w := writes(fleet); len(w) != 0 {
		t.Fatalf("plan wrote %v", w)
	}
	joins := 0
	for _, e := range rec.OfType(event.Planned) {
		if e.Step == "kubeadm join as a control plane through lb.example.com:6443" || e.Step == "kubeadm join as a worker through lb.example.com:6443" {
			joins++
		}
	}
	if joins != 4 {
		t.Errorf("%d joins planned, want 4", joins)
	}
}

// A registry login an operator left in containerd's files reaches no event,
// plan or log line: the state read is secret output, its logins redacted.
func TestKubernetesRegistryLoginsStaySecret(t *testing.T) {
	t.Parallel()
	inv := kubeInventory(t, haSpec, haHosts)
	const login = "Basic b3BlcmF0b3I6aHVudGVyMg=="
	for _, dryRun := range []bool{true, false} {
		fake := newFakeKube("w1", "w2")
		hostsTOML := "server = \"https://reg.example.com\"\n[host.\"https://reg.example.com\".header]\n  authorization = \"" + login + "\"\n"
		configTOML := "version = 3\n[plugins.'io.containerd.cri.v1.images'.registry.configs.'reg.example.com'.auth]\n  password = \"hunter2-canary\"\n"
		fake.host("w1").files["/etc/containerd/certs.d/reg.example.com/hosts.toml"] = hostsTOML
		fake.host("w1").files[kubeadm.ContainerdConfigFile] = configTOML
		sum, _, rec := runKube(t, inv.Machines, allPhases(kubeadm.New(inv)), fake, dryRun)
		if c := sum.HostCounts(); c.Failed != 0 {
			t.Fatalf("dry-run %v: %+v %+v", dryRun, c, sum.Failed())
		}
		// The state read carries the files base64-encoded, whole.
		assertNoSecret(t, rec, login, "hunter2-canary", base64.StdEncoding.EncodeToString([]byte(hostsTOML)), base64.StdEncoding.EncodeToString([]byte(configTOML)))
	}
}

// A plan against a cluster that exists, with hosts still to join, mints
// no token and uploads no certificates: the joins show stand-ins.
func TestKubernetesPlanJoinsWithoutToken(t *testing.T) {
	t.Parallel()
	inv := kubeInventory(t, haSpec, haHosts)
	fake := newFakeKube("w1", "w2")
	var first []inventory.Machine // the cluster without w2
	for _, m := range inv.Machines {
		if m.Name != "w2" {
			first = append(first, m)
		}
	}
	if sum, _, _ := runKube(t, first, allPhases(kubeadm.New(inv)), fake, false); sum.HostCounts().Failed != 0 {
		t.Fatalf("init: %+v", sum.Failed())
	}
	keys := len(fake.keys)
	sum, fleet, rec := runKube(t, inv.Machines, allPhases(kubeadm.New(inv)), fake, true)
	if c := sum.HostCounts(); c.Failed != 0 {
		t.Fatalf("plan: %+v %+v", c, sum.Failed())
	}
	if w := writes(fleet); len(w) != 0 {
		t.Fatalf("plan wrote %v", w)
	}
	if len(fake.keys) != keys {
		t.Errorf("the plan uploaded certificates: %d keys, was %d", len(fake.keys), keys)
	}
	planned := 0
	for _, e := range rec.OfType(event.Planned) {
		if e.Host == "w2" && strings.HasPrefix(e.Step, "kubeadm join as a worker") {
			planned++
		}
	}
	if planned != 1 {
		t.Errorf("%d joins of w2 planned, want 1", planned)
	}
}

// Workers whose first control plane failed are named with the reason; a
// re-run converges, and a host that belongs to another cluster is refused,
// not joined again.
func TestKubernetesJoinFailures(t *testing.T) {
	t.Parallel()
	hosts := `
    - {name: cp1, address: 10.0.0.1, roles: [control-plane]}
    - {name: w1, address: 10.0.0.11, roles: [worker]}
    - {name: w2, address: 10.0.0.12, roles: [worker]}`
	inv := kubeInventory(t, "", hosts)
	fake := newFakeKube()
	fake.host("w2").server = "https://10.7.7.7:6443"
	phases := func() []engine.Phase {
		l := kubeadm.New(inv)
		return []engine.Phase{l.Packages(), l.Containerd(), l.Init(), l.JoinWorkers()}
	}
	// kubeadm init fails on cp1: the fake wants the host prepared first.
	sum, _, _ := runKube(t, inv.Machines, phases(), fake, false)
	failed := map[string]string{}
	for _, f := range sum.Failed() {
		failed[f.Host] = f.Phase + ": " + f.Err.Error()
	}
	if len(failed) != 3 || !strings.HasPrefix(failed["cp1"], kubeadm.PhaseInit+": ") ||
		!strings.Contains(failed["w1"], "the first control plane cp1 is not ready") || !strings.Contains(failed["w2"], "the first control plane cp1 is not ready") {
		t.Fatalf("failed: %v", failed)
	}
	for _, h := range []string{"cp1", "w1"} {
		fake.host(h).prepared = true
	}
	sum, fleet, _ := runKube(t, inv.Machines, phases(), fake, false)
	failed = map[string]string{}
	for _, f := range sum.Failed() {
		failed[f.Host] = f.Err.Error()
	}
	if len(failed) != 1 || !strings.Contains(failed["w2"], "w2 belongs to another cluster") || !strings.Contains(failed["w2"], "gpukit reset --hosts w2") {
		t.Fatalf("failed: %v", failed)
	}
	if got := writes(fleet); !slices.Equal(got["cp1"], []string{"kubeadm init", "create a join token"}) || !slices.Equal(got["w1"], []string{"kubeadm join"}) {
		t.Errorf("re-run wrote %v", got)
	}
}

// reset of a worker: the staying control plane drains and deletes its node,
// the host is reset; a second reset changes nothing; init joins it again.
func TestKubernetesReset(t *testing.T) {
	t.Parallel()
	hosts := `
    - {name: cp1, address: 10.0.0.1, roles: [control-plane]}
    - {name: w1, address: 10.0.0.11, roles: [worker]}
    - {name: w2, address: 10.0.0.12, roles: [worker]}`
	inv := kubeInventory(t, "", hosts)
	fake := newFakeKube("w1")
	if sum, _, _ := runKube(t, inv.Machines, allPhases(kubeadm.New(inv)), fake, false); sum.HostCounts().Failed != 0 {
		t.Fatalf("init: %+v", sum.Failed())
	}
	reset := func() (*engine.Summary, *enginetest.Fleet) {
		l := kubeadm.New(inv)
		phases := []engine.Phase{l.RemoveNodes([]string{"w1"}), engine.Scoped{Phase: l.ResetNode(), Hosts: []string{"w1"}}}
		sum, fleet, _ := runKube(t, []inventory.Machine{inv.Machines[1], inv.Machines[0]}, phases, fake, false)
		return sum, fleet
	}
	sum, fleet := reset()
	if c := sum.HostCounts(); c.Changed != 2 || c.Failed != 0 {
		t.Fatalf("reset: %+v %+v", c, sum.Failed())
	}
	if got := writes(fleet); !slices.Equal(got["cp1"], []string{"drain and delete nodes"}) || !slices.Equal(got["w1"], []string{"reset the kubernetes node"}) {
		t.Errorf("reset wrote %v", got)
	}
	if drain := fleet.Executor("cp1").Commands()[len(fleet.Executor("cp1").Commands())-1]; !slices.Equal(drain.Args, []string{"w1"}) {
		t.Errorf("drained %v", drain.Args)
	}
	sum, fleet = reset()
	if c := sum.HostCounts(); c.Changed != 0 || len(writes(fleet)) != 0 {
		t.Fatalf("second reset: %+v, writes %v", c, writes(fleet))
	}
	// The control plane mints w1's join token: a change there too.
	sum, fleet, _ = runKube(t, inv.Machines, allPhases(kubeadm.New(inv)), fake, false)
	if c := sum.HostCounts(); c.Changed != 2 || c.Failed != 0 || !slices.Contains(writes(fleet)["w1"], "kubeadm join") || !slices.Equal(writes(fleet)["cp1"], []string{"create a join token"}) {
		t.Fatalf("init after reset: %+v, writes %v, failed %+v", c, writes(fleet), sum.Failed())
	}
}
