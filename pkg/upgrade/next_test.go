package upgrade

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/kube"
)

// planner is an Upgrade of n GPU nodes whose plan ran: every node needs
// the driver, cordoned lists the unschedulable ones (ours when marked so).
func planner(t *testing.T, n int, o Options, cordoned map[string]bool) (*Upgrade, []*engine.Host) {
	t.Helper()
	inv := &inventory.Inventory{}
	var objs []*corev1.Node
	var hosts []*engine.Host
	for i := range n {
		name := fmt.Sprintf("gpu-%d", i+1)
		inv.Machines = append(inv.Machines, inventory.Machine{Name: name})
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name},
			Status: corev1.NodeStatus{Capacity: corev1.ResourceList{kube.GPUResource: resource.MustParse("8")}}}
		if ours, ok := cordoned[name]; ok {
			node.Spec.Unschedulable = true
			if ours {
				node.Annotations = map[string]string{AnnotationCordoned: "2026-12-02T00:00:00Z"}
			}
		}
		objs = append(objs, node)
		hosts = append(hosts, &engine.Host{Machine: inv.Machines[i]})
	}
	cs := fake.NewClientset()
	for _, node := range objs {
		if _, err := cs.CoreV1().Nodes().Create(context.Background(), node, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	u := New(inv, nil, nil, nil, nil, o)
	u.orch = &Kube{Client: cs, Inventory: inv}
	u.budget = o.Budget.Of(n)
	listed, err := u.orch.Nodes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, node := range listed {
		u.nodes[node.Name] = node
		u.pending[node.Name] = []string{"nvidia/driver"}
		u.ours[node.Name] = node.Ours
	}
	return u, hosts
}

func names(hs []*engine.Host) []string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = h.Name()
	}
	return out
}

// The waves: the budget less every GPU node already out (someone else's
// cordon counts; that node is left alone), nodes a killed run left
// cordoned first, the canary alone first.
func TestNextWaves(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	u, hosts := planner(t, 10, Options{Budget: Budget{Percent: 30}}, map[string]bool{"gpu-2": false, "gpu-7": true})
	w := u.next(ctx, hosts, nil)
	if got := names(w.Hosts); !slices.Equal(got, []string{"gpu-7", "gpu-1"}) {
		t.Errorf("first wave %v: want gpu-7 (left cordoned by a killed run) and gpu-1, 3 minus gpu-2 out", got)
	}
	if why := w.Skip[hosts[1]]; !strings.Contains(why, "cordoned by someone else") {
		t.Errorf("gpu-2: %q", why)
	}

	u, hosts = planner(t, 10, Options{Budget: Budget{N: 3}, Canary: 1, ContinueOnFailure: true}, nil)
	w = u.next(ctx, hosts, nil)
	if got := names(w.Hosts); !slices.Equal(got, []string{"gpu-1"}) {
		t.Fatalf("canary wave %v", got)
	}
	w = u.next(ctx, hosts[1:], []engine.Outcome{{Host: hosts[0], Err: errors.New("not verified")}})
	if !strings.HasPrefix(w.Stop, "stopped: the canary: gpu-1 failed") || len(w.Hosts) != 0 {
		t.Errorf("after a failed canary, even with --continue-on-failure: %+v", w)
	}

	u, hosts = planner(t, 10, Options{Budget: Budget{N: 3}, Canary: 1}, nil)
	u.next(ctx, hosts, nil)
	w = u.next(ctx, hosts[1:], []engine.Outcome{{Host: hosts[0]}})
	if got := names(w.Hosts); !slices.Equal(got, []string{"gpu-2", "gpu-3", "gpu-4"}) {
		t.Errorf("after the canary verified: %v", got)
	}

	// The host the API is reached through goes last and alone (its reboot
	// takes the API away from a wave's other nodes), unless a killed run
	// left it out of service: then first, still alone.
	u, hosts = planner(t, 4, Options{Budget: Budget{N: 3}}, nil)
	u.apiHost = "gpu-1"
	w = u.next(ctx, hosts, nil)
	if got := names(w.Hosts); !slices.Equal(got, []string{"gpu-2", "gpu-3", "gpu-4"}) {
		t.Errorf("first wave with the API on gpu-1: %v", got)
	}
	w = u.next(ctx, hosts[:1], []engine.Outcome{{Host: hosts[1]}, {Host: hosts[2]}, {Host: hosts[3]}})
	if got := names(w.Hosts); !slices.Equal(got, []string{"gpu-1"}) {
		t.Errorf("last wave: %v", got)
	}
	u, hosts = planner(t, 4, Options{Budget: Budget{N: 3}}, map[string]bool{"gpu-1": true})
	u.apiHost = "gpu-1"
	if got := names(u.next(ctx, hosts, nil).Hosts); !slices.Equal(got, []string{"gpu-1"}) {
		t.Errorf("first wave with the API's host left cordoned by a killed run: %v", got)
	}

	// --continue-on-failure: a failed node left cordoned takes its room.
	u, hosts = planner(t, 6, Options{Budget: Budget{N: 2}, ContinueOnFailure: true}, map[string]bool{"gpu-1": true})
	w = u.next(ctx, hosts[1:], []engine.Outcome{{Host: hosts[0], Err: errors.New("not verified")}})
	if got := names(w.Hosts); !slices.Equal(got, []string{"gpu-2"}) {
		t.Errorf("with gpu-1 failed and cordoned, budget 2: %v", got)
	}
	u, hosts = planner(t, 6, Options{Budget: Budget{N: 1}, ContinueOnFailure: true}, map[string]bool{"gpu-1": true})
	w = u.next(ctx, hosts[1:], []engine.Outcome{{Host: hosts[0], Err: errors.New("not verified")}})
	if !strings.Contains(w.Stop, "leaves no room") {
		t.Errorf("budget 1 used up by the failed node: %+v", w)
	}
}

// The cluster's own upgrade (EveryNode): the control planes first, one at
// a time in the inventory's order, whatever the budget; no worker before
// every control plane is done; a control plane's failure stops the rollout
// even with --continue-on-failure; the budget counts the workers.
func TestNextEveryNode(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	setup := func(o Options, cordoned map[string]bool) (*Upgrade, []*engine.Host) {
		o.EveryNode = true
		u, hosts := planner(t, 6, o, cordoned)
		for i := range 2 { // gpu-1 and gpu-2 are control planes
			u.inv.Machines[i].Roles = []inventory.Role{inventory.RoleControlPlane}
			hosts[i].Machine.Roles = u.inv.Machines[i].Roles
		}
		u.apiHost = "gpu-1"
		u.cpNodes = map[string]bool{"gpu-1": true, "gpu-2": true}
		return u, hosts
	}

	u, hosts := setup(Options{Budget: Budget{N: 3}}, nil)
	var done []engine.Outcome
	var waves [][]string
	pending := hosts
	for range 10 {
		w := u.next(ctx, pending, done)
		if w.Stop != "" || len(w.Hosts) == 0 {
			break
		}
		waves = append(waves, names(w.Hosts))
		for _, h := range w.Hosts {
			done = append(done, engine.Outcome{Host: h})
			pending = slices.DeleteFunc(slices.Clone(pending), func(p *engine.Host) bool { return p == h })
		}
	}
	if got := fmt.Sprint(waves); got != "[[gpu-1] [gpu-2] [gpu-3 gpu-4 gpu-5] [gpu-6]]" {
		t.Errorf("waves %s: want the control planes alone and first, then the workers 3 at a time", got)
	}

	// A control plane left for its training: the workers wait.
	u, hosts = setup(Options{Budget: Budget{N: 3}}, nil)
	u.next(ctx, hosts, nil)
	u.left["gpu-1"] = "training still running"
	w := u.next(ctx, hosts[1:], []engine.Outcome{{Host: hosts[0], Left: "training still running"}})
	if got := names(w.Hosts); !slices.Equal(got, []string{"gpu-2"}) {
		t.Fatalf("after gpu-1 was left: %v, want gpu-2 (the next control plane)", got)
	}
	w = u.next(ctx, hosts[2:], []engine.Outcome{{Host: hosts[0], Left: "training still running"}, {Host: hosts[1]}})
	if !strings.Contains(w.Stop, "control plane gpu-1 is not upgraded (training still running): the workers wait") || len(w.Hosts) != 0 {
		t.Errorf("workers with gpu-1 left behind: %+v", w)
	}

	// A failed control plane stops the rollout, --continue-on-failure or not.
	u, hosts = setup(Options{Budget: Budget{N: 3}, ContinueOnFailure: true}, map[string]bool{"gpu-1": true})
	w = u.next(ctx, hosts[1:], []engine.Outcome{{Host: hosts[0], Err: errors.New("kubeadm upgrade apply: exit status 1")}})
	if !strings.HasPrefix(w.Stop, "stopped: gpu-1 failed and stays cordoned") {
		t.Errorf("after the first control plane failed: %+v", w)
	}

	// Workers a killed run left cordoned go first among the workers, and
	// count in the budget of workers (not of control planes).
	u, hosts = setup(Options{Budget: Budget{N: 2}}, map[string]bool{"gpu-5": true})
	u.finished["gpu-1"], u.finished["gpu-2"] = true, true
	w = u.next(ctx, hosts[2:], nil)
	if got := names(w.Hosts); !slices.Equal(got, []string{"gpu-5", "gpu-3"}) {
		t.Errorf("workers with gpu-5 left cordoned by a killed run: %v", got)
	}
}

// WaitKubelet returns once the node's kubelet reports the version, and
// names what it reports when it never does.
func TestWaitKubelet(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cs := fake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "w1"},
		Status: corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{KubeletVersion: "v1.36.3"}}})
	k := &Kube{Client: cs, Poll: 5 * time.Millisecond}
	if err := k.WaitKubelet(ctx, "w1", "v1.37.2", 30*time.Millisecond); err == nil || !strings.Contains(err.Error(), "its kubelet reports v1.36.3") {
		t.Errorf("an old kubelet: %v", err)
	}
	go func() {
		time.Sleep(20 * time.Millisecond)
		n, _ := cs.CoreV1().Nodes().Get(ctx, "w1", metav1.GetOptions{})
		n.Status.NodeInfo.KubeletVersion = "v1.37.2"
		_, _ = cs.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
	}()
	if err := k.WaitKubelet(ctx, "w1", "v1.37.2", 5*time.Second); err != nil {
		t.Errorf("the new kubelet: %v", err)
	}
}
