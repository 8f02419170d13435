package flow

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/inventory"
)

func kubeInv() *inventory.Inventory {
	inv := &inventory.Inventory{Machines: []inventory.Machine{
		{Name: "cp1", Address: "10.0.0.1", Roles: []inventory.Role{inventory.RoleControlPlane}},
		{Name: "cp2", Address: "10.0.0.2", Roles: []inventory.Role{inventory.RoleControlPlane}},
		{Name: "w1", Address: "10.0.0.11", Roles: []inventory.Role{inventory.RoleWorker}},
		{Name: "w2", Address: "10.0.0.12", Roles: []inventory.Role{inventory.RoleWorker}},
	}}
	inv.Cluster.Spec.Orchestrator = inventory.Kubernetes
	inv.Cluster.Spec.Versions.Kubernetes = "1.37.2"
	return inv
}

// With orchestrator kubernetes, init's one list goes on after the NVIDIA
// layer with the kubeadm phases, then the platform's (those the inventory
// turns off target no host).
func TestInitFlowKubernetes(t *testing.T) {
	f := NewInit(kubeInv(), InitOptions{})
	got := phaseNames(f.Phases)
	want := []string{"nvidia/verify", "nvidia/mig", "kubernetes/prepare", "kubernetes/packages", "kubernetes/containerd", "kubernetes/init",
		"kubernetes/join-control-planes", "kubernetes/join-workers", "kubernetes/etcd-backup", "kubernetes/kubeconfig", "kubernetes/labels", "kubernetes/cni", "kubernetes/gpu",
		"platform/storage", "platform/ingress", "platform/monitoring", "platform/gpu-metrics", "platform/training-metrics", "platform/dashboards", "kubeflow/manifests", "platform/routes"}
	if !reflect.DeepEqual(got[len(got)-len(want):], want) {
		t.Errorf("phases %v", got)
	}
	if f.Kube == nil || f.Platform == nil {
		t.Error("no Kubernetes layer to read the kubeconfig from, or no platform to read the logins from")
	}
	if _, err := engine.SelectPhases(f.Phases, nil, []string{"kubernetes"}); err != nil {
		t.Errorf("--skip-phases kubernetes: %v", err)
	}
}

// add-node on Kubernetes connects to the named hosts and the first control
// plane (which makes the join token); every phase is scoped to the new hosts.
func TestAddNodeFlowKubernetes(t *testing.T) {
	f, err := NewAddNode(kubeInv(), []string{"w2", "cp2"}, InitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := machineNames(f.Machines); !reflect.DeepEqual(got, []string{"w2", "cp2", "cp1"}) {
		t.Errorf("machines %v", got)
	}
	got := phaseNames(f.Phases)
	want := []string{"nvidia/verify", "nvidia/mig", "kubernetes/prepare", "kubernetes/packages", "kubernetes/containerd", "kubernetes/join-control-planes", "kubernetes/join-workers", "kubernetes/etcd-backup", "kubernetes/labels"}
	if !reflect.DeepEqual(got[len(got)-len(want):], want) {
		t.Errorf("phases %v", got)
	}
	for _, p := range f.Phases[:len(f.Phases)-1] {
		if s, ok := p.(engine.Scoped); !ok || !reflect.DeepEqual(s.Hosts, []string{"w2", "cp2"}) {
			t.Errorf("%s is not scoped to the new hosts", p.Name())
		}
	}
	// The labels phase runs on the first control plane, for the new nodes.
	if _, ok := f.Phases[len(f.Phases)-1].(engine.Scoped); ok {
		t.Error("kubernetes/labels is scoped to the new hosts: it runs on the first control plane")
	}
	if _, err := NewAddNode(kubeInv(), []string{"cp1"}, InitOptions{}); err == nil || !strings.Contains(err.Error(), "cp1 is the first control plane") {
		t.Errorf("add-node of the first control plane: %v", err)
	}
}

// reset of some hosts also connects to a control plane that stays, which
// drains and deletes their nodes; of all, to every host, none staying.
func TestResetFlowKubernetes(t *testing.T) {
	for _, tt := range []struct {
		names, hosts, machines []string
	}{
		{nil, []string{"cp1", "cp2", "w1", "w2"}, []string{"cp1", "cp2", "w1", "w2"}},
		{[]string{"w1"}, []string{"w1"}, []string{"w1", "cp1"}},
		{[]string{"cp1", "w2"}, []string{"cp1", "w2"}, []string{"cp1", "w2", "cp2"}},
	} {
		f, err := NewReset(kubeInv(), tt.names)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(f.Hosts, tt.hosts) || !reflect.DeepEqual(machineNames(f.Machines), tt.machines) {
			t.Errorf("%v: hosts %v, machines %v", tt.names, f.Hosts, machineNames(f.Machines))
		}
		if got := phaseNames(f.Phases); !reflect.DeepEqual(got, []string{"reset/remove-nodes", "reset/node", "reset/etcd-backup", "reset/proxy"}) {
			t.Errorf("phases %v", got)
		}
	}
}

func TestStatusFlowKubernetes(t *testing.T) {
	f, err := NewStatus(kubeInv(), StatusOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Every host: each shows its GPUs; the first control plane lists the
	// nodes.
	if got := machineNames(f.Machines); !reflect.DeepEqual(got, []string{"cp1", "cp2", "w1", "w2"}) {
		t.Errorf("status connects to %v, want every host", got)
	}
	if got := phaseNames(f.Phases); !reflect.DeepEqual(got, []string{"status/nodes", "status/gpus", "status/gpu-metrics"}) {
		t.Errorf("phases %v", got)
	}
}

// status --hosts reads the named hosts' GPUs; the control planes, named or
// not, still list the nodes. Unknown names are bad input, all at once.
func TestStatusHosts(t *testing.T) {
	f, err := NewStatus(kubeInv(), StatusOptions{Hosts: []string{"w2"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := machineNames(f.Machines); !reflect.DeepEqual(got, []string{"cp1", "cp2", "w2"}) {
		t.Errorf("status --hosts w2 connects to %v", got)
	}
	for _, p := range f.Phases {
		s, scoped := p.(engine.Scoped)
		if scoped != (p.Name() == "status/gpus") || scoped && !reflect.DeepEqual(s.Hosts, []string{"w2"}) {
			t.Errorf("%s: scoped %v %v", p.Name(), scoped, s.Hosts)
		}
	}
	if _, err := NewStatus(kubeInv(), StatusOptions{Hosts: []string{"w9", "w1", "cp9"}}); err == nil || err.Error() != "w9, cp9 are not in the inventory" {
		t.Errorf("unknown hosts: %v", err)
	}
	if _, err := NewStatus(swarmInv(), StatusOptions{Kubeconfig: []byte("x")}); err == nil || !strings.Contains(err.Error(), "spec.orchestrator is swarm") {
		t.Errorf("swarm with a kubeconfig: %v", err)
	}
}

// kubeflow deploy reaches the cluster through the first control plane
// only, or from this machine with a kubeconfig; a swarm has no platform.
func TestKubeflowDeployFlow(t *testing.T) {
	want := []string{"platform/storage", "platform/ingress", "platform/monitoring", "platform/gpu-metrics", "platform/training-metrics", "platform/dashboards", "kubeflow/manifests", "platform/routes"}
	inv := kubeInv()
	inv.Cluster.Metadata.Name = "lab"
	f, err := NewKubeflowDeploy(inv, KubeflowOptions{})
	if err != nil || !reflect.DeepEqual(phaseNames(f.Phases), want) || len(f.Machines) != 1 || f.Machines[0].Name != "cp1" || f.local || f.Cluster != "lab" {
		t.Errorf("inventory: %v %v %v %q", err, phaseNames(f.Phases), f.Machines, f.Cluster)
	}
	f, err = NewKubeflowDeploy(nil, KubeflowOptions{Kubeconfig: []byte("x"), APIMachine: "prod"})
	if err != nil || !reflect.DeepEqual(phaseNames(f.Phases), want) || len(f.Machines) != 1 || f.Machines[0].Name != "prod" || !f.local || f.Cluster != "prod" {
		t.Errorf("kubeconfig: %v %v %v %q", err, phaseNames(f.Phases), f.Machines, f.Cluster)
	}
	// The inventory's name, reached with a kubeconfig: its addons, its files.
	f, err = NewKubeflowDeploy(inv, KubeflowOptions{Kubeconfig: []byte("x"), APIMachine: "prod"})
	if err != nil || f.Machines[0].Name != "prod" || !f.local || f.Cluster != "lab" {
		t.Errorf("inventory and kubeconfig: %v %v %q", err, f.Machines, f.Cluster)
	}
	s, err := NewKubeflowStatus(kubeInv(), KubeflowOptions{})
	if err != nil || !reflect.DeepEqual(phaseNames(s.Phases), []string{"kubeflow/status"}) {
		t.Errorf("status: %v %v", err, phaseNames(s.Phases))
	}
	sw := kubeInv()
	sw.Cluster.Spec.Orchestrator = inventory.Swarm
	if _, err := NewKubeflowDeploy(sw, KubeflowOptions{}); err == nil || !strings.Contains(err.Error(), "Kubeflow runs on Kubernetes only; gpukit platform deploy") {
		t.Errorf("swarm: %v", err)
	}
}

// A missing local source of Kubeflow's manifests is named by where it came
// from; a flag's path is used instead of the inventory's, so only it counts.
func TestCheckKubeflowSources(t *testing.T) {
	have := filepath.Join(t.TempDir(), "manifests.tar.gz")
	if err := os.WriteFile(have, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	inv := kubeInv()
	inv.File = "cluster.yaml"
	inv.Cluster.Spec.Kubeflow.Manifests = "/nonexistent/manifests.tar.gz"
	for _, tc := range []struct {
		o    KubeflowOptions
		want string
	}{
		{KubeflowOptions{}, "cluster.yaml: spec.kubeflow: manifests: stat /nonexistent/manifests.tar.gz"},
		{KubeflowOptions{Manifests: have}, ""},
		{KubeflowOptions{Manifests: have, RemoteBases: "/nonexistent/rb"}, "--remote-bases /nonexistent/rb: stat /nonexistent/rb"},
	} {
		err := CheckKubeflowSources(inv, tc.o)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.want)) {
			t.Errorf("%+v: %v, want %q", tc.o, err, tc.want)
		}
	}
	if err := CheckKubeflowSources(nil, KubeflowOptions{}); err != nil {
		t.Error(err)
	}
}

// --merge-kubeconfig: into $KUBECONFIG's first file, as the context the
// merge made current; a second merge changes nothing.
func TestMergeKubeconfig(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config")
	t.Setenv("KUBECONFIG", path+string(os.PathListSeparator)+filepath.Join(dir, "other"))
	for _, changed := range []bool{true, false} {
		m, err := MergeKubeconfig("lab", []byte(adminKubeconfig))
		if err != nil || *m != (MergedKubeconfig{Path: path, Context: "lab-admin@lab", Changed: changed}) {
			t.Fatalf("%+v, %v", m, err)
		}
	}
	if b, err := os.ReadFile(path); err != nil || !strings.Contains(string(b), "current-context: lab-admin@lab") {
		t.Errorf("%s:\n%s", path, b)
	}
}

const adminKubeconfig = `apiVersion: v1
kind: Config
clusters:
- {name: Kind-Lab, cluster: {server: "https://10.0.0.1:6443"}}
users:
- {name: admin, user: {token: T}}
contexts:
- {name: admin@lab, context: {cluster: Kind-Lab, user: admin}}
current-context: admin@lab
`

// upgrade kubernetes: its decision refuses a skipped minor and a downgrade
// before any host (bad input naming the file and the path to take), and a
// swarm; a resumed rollout must move to the same release.
func TestDecideKubernetes(t *testing.T) {
	dir := t.TempDir()
	inv := filepath.Join(dir, "cluster.yaml")
	doc := strings.Replace(string(inventory.Example()), `kubernetes: "1.37.2"`, `kubernetes: "1.36.3"`, 1)
	if doc == string(inventory.Example()) {
		t.Fatal("the example inventory names no spec.versions.kubernetes 1.37.2")
	}
	if err := os.WriteFile(inv, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(dir, "state.json")
	for _, tt := range []struct{ version, want string }{
		{"1.38.0", "skips a minor"},
		{"1.35.4", "downgrade"},
		{"", "--version X.Y.Z"},
	} {
		_, err := DecideKubernetes(inv, state, tt.version, false, false)
		var ie *InputError
		if !errors.As(err, &ie) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("--version %q: %v, want an input error saying %q", tt.version, err, tt.want)
		}
	}
	r, err := DecideKubernetes(inv, state, "v1.37.2", false, false)
	if err != nil || r.Versions.Kubernetes.Value != "1.37.2" {
		t.Fatalf("1.36.3 -> 1.37.2: %v %+v", err, r)
	}
	if _, err := os.Stat(state); err == nil {
		t.Error("deciding wrote the state")
	}
	swarm := kubeInv()
	swarm.Cluster.Spec.Orchestrator = inventory.Swarm
	if _, err := NewUpgradeKubernetes(swarm, UpgradeOptions{}); err == nil || !strings.Contains(err.Error(), "spec.orchestrator is swarm") {
		t.Errorf("on swarm: %v", err)
	}
	f, err := NewUpgradeKubernetes(kubeInv(), UpgradeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := phaseNames(f.Phases); !reflect.DeepEqual(got, []string{"preflight/facts", "kubernetes/upgrade-plan", "upgrade/check", "upgrade/plan",
		"upgrade/etcd-snapshot", "upgrade/rollout", "kubernetes/cni", "kubernetes/gpu"}) {
		t.Errorf("phases %v", got)
	}
	if got := machineNames(f.Machines); !reflect.DeepEqual(got, []string{"cp1", "cp2", "w1", "w2"}) {
		t.Errorf("machines %v", got)
	}
}
