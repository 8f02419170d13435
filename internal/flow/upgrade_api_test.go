package flow

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/engine/enginetest"
	"github.com/gpukit/gpukit/pkg/etcd"
	"github.com/gpukit/gpukit/pkg/event"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/nvidia"
	"github.com/gpukit/gpukit/pkg/upgrade"
	"github.com/gpukit/gpukit/test/cluster"
	"github.com/gpukit/gpukit/test/gpusim/scriptsim"
)

// simGPUs are the GPUs of each simulated worker, and of its kwok node.
const simGPUs = 2

// newUpgradeSim is the rollout's hosts, kept in dir: GPU workers with the
// NVIDIA stack at driver, and hosts without GPUs (the control plane).
func newUpgradeSim(dir string, gpuHosts, cpuHosts []string, driver string) (*scriptsim.Sim, error) {
	hosts := map[string]scriptsim.Host{}
	for _, h := range gpuHosts {
		hosts[h] = scriptsim.Installed(driver, simGPUs)
	}
	for _, h := range cpuHosts {
		hosts[h] = scriptsim.CPU()
	}
	return scriptsim.New(dir, hosts)
}

// upgradeInventory is a cluster of one control plane (no GPU, no node of
// the test control plane) and GPU workers, at driver 580.95.05.
func upgradeInventory(workers ...string) string {
	doc := "apiVersion: gpukit.dev/v1alpha1\nkind: Cluster\nmetadata: {name: up}\nspec:\n  versions: {nvidiaDriver: 580.95.05}\n  hosts:\n" +
		"  - {name: cp-1, address: 10.0.0.1, roles: [control-plane]}\n"
	for i, w := range workers {
		doc += fmt.Sprintf("  - {name: %s, address: 10.0.1.%d, roles: [worker]}\n", w, i+1)
	}
	return doc
}

// runUpgrade is gpukit upgrade driver --driver 590.48.01 over the simulated
// hosts, the API reached with kubeconfig.
func runUpgrade(t testing.TB, ctx context.Context, doc string, kc []byte, sim *scriptsim.Sim, o upgrade.Options) (*engine.Summary, *UpgradeDriver, *enginetest.Recorder) {
	t.Helper()
	return runUpgradeWith(t, ctx, doc, kc, sim, o, false)
}

// runUpgradeWith is runUpgrade, a dry-run when dryRun.
func runUpgradeWith(t testing.TB, ctx context.Context, doc string, kc []byte, sim *scriptsim.Sim, o upgrade.Options, dryRun bool) (*engine.Summary, *UpgradeDriver, *enginetest.Recorder) {
	t.Helper()
	inv, err := inventory.ParseWith("up.yaml", []byte(doc), inventory.Overrides{NvidiaDriver: inventory.Override{Value: "590.48.01", Flag: "--driver"}})
	if err != nil {
		t.Fatal(err)
	}
	if o.Poll == 0 {
		o.Poll = 200 * time.Millisecond
	}
	if o.Drain.Timeout == 0 {
		o.Drain.Timeout, o.Drain.GracePeriod = time.Minute, -1
	}
	if o.GPUTimeout == 0 {
		o.GPUTimeout = time.Minute
	}
	f, err := NewUpgradeDriver(inv, UpgradeOptions{NVIDIA: nvidia.Options{MaxParallelReboots: 16, RebootTimeout: time.Minute}, Upgrade: o, Kubeconfig: kc})
	if err != nil {
		t.Fatal(err)
	}
	rec := &enginetest.Recorder{}
	r := &engine.Runner{Name: f.Name, Phases: f.Phases, Sink: rec, ReconnectInterval: 10 * time.Millisecond, DryRun: dryRun}
	sum, _ := r.Run(ctx, f.Machines, sim.Fleet().Dial)
	if sum == nil {
		t.Fatal("the run did not start")
	}
	return sum, f, rec
}

// unavailability watches the Nodes and keeps the most GPU nodes that were
// unschedulable at one moment, and when.
type unavailability struct {
	mu   sync.Mutex
	now  map[string]bool
	most int
	at   []string
	stop func()
}

func watchUnschedulable(t *testing.T, cs kubernetes.Interface) *unavailability {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	list, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	u := &unavailability{now: map[string]bool{}}
	for _, n := range list.Items {
		u.see(&n)
	}
	w, err := cs.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			if n, ok := ev.Object.(*corev1.Node); ok && ev.Type != watch.Error {
				u.see(n)
			}
		}
	}()
	u.stop = func() { cancel(); w.Stop(); <-done }
	t.Cleanup(u.stop)
	return u
}

func (u *unavailability) see(n *corev1.Node) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if !upgrade.IsGPUNode(n) {
		return
	}
	u.now[n.Name] = n.Spec.Unschedulable
	count := 0
	var names []string
	for name, out := range u.now {
		if out {
			count++
			names = append(names, name)
		}
	}
	if count > u.most {
		slices.Sort(names)
		u.most, u.at = count, names
	}
}

func (u *unavailability) max() (int, []string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.most, u.at
}

// gpuWorkloads runs a serving Deployment (3 replicas of one GPU, a
// PodDisruptionBudget of one) and a training Job (one GPU) bound to node.
func gpuWorkloads(t *testing.T, c *cluster.Cluster, trainingNode string) {
	t.Helper()
	c.Apply(t, `apiVersion: apps/v1
kind: Deployment
metadata: {name: serve, namespace: default}
spec:
  replicas: 3
  selector: {matchLabels: {app: serve}}
  template:
    metadata: {labels: {app: serve}}
    spec:
      containers:
      - name: s
        image: registry.example/serve:1
        resources: {limits: {nvidia.com/gpu: 1}}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: serve, namespace: default}
spec:
  maxUnavailable: 1
  selector: {matchLabels: {app: serve}}
---
apiVersion: batch/v1
kind: Job
metadata: {name: train, namespace: default}
spec:
  backoffLimit: 0
  template:
    metadata:
      annotations:
        gpukit.dev/checkpoint: "signal:SIGUSR1"
        gpukit.dev/checkpoint-timeout: 5s
        # kwok completes a Job's pods after a few seconds: this one trains
        # for a day.
        pod-complete.stage.kwok.x-k8s.io/delay: 24h
        pod-complete.stage.kwok.x-k8s.io/jitter-delay: 24h
    spec:
      restartPolicy: Never
      nodeName: `+trainingNode+`
      containers:
      - name: t
        image: registry.example/train:1
        resources: {limits: {nvidia.com/gpu: 1}}
`)
	waitPods(t, c, 4)
}

// waitPods waits until n pods of the default namespace are Running.
func waitPods(t *testing.T, c *cluster.Cluster, n int) {
	t.Helper()
	cs, err := kubernetes.NewForConfig(c.RESTConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		pods, err := cs.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{})
		running := 0
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
				running++
			}
		}
		if err == nil && running >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d pods Running after 2 minutes (%v)", running, n, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func trainingPod(t *testing.T, cs kubernetes.Interface) corev1.Pod {
	t.Helper()
	pods, err := cs.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{LabelSelector: "job-name=train"})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("training pods: %v, %v", pods, err)
	}
	return pods.Items[0]
}

func hostResult(sum *engine.Summary, name string) engine.HostResult {
	for _, h := range sum.Hosts {
		if h.Host == name {
			return h
		}
	}
	return engine.HostResult{}
}

func kubeSetup(t *testing.T, workers ...string) (*cluster.Cluster, kubernetes.Interface, []byte) {
	t.Helper()
	c := cluster.Start(t, cluster.Options{})
	for _, w := range workers {
		c.AddNode(t, cluster.GPUNode{Name: w, GPUs: simGPUs})
	}
	cs, err := kubernetes.NewForConfig(c.RESTConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	kc, err := os.ReadFile(c.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	return c, cs, kc
}

// The rollout against a real API server with kwok GPU nodes: never more
// than --max-unavailable GPU nodes unschedulable, the training pod neither
// evicted nor its node touched, serving pods drained through their PDB, a
// node that fails verification stops the rollout and stays cordoned, and
// --resume finishes without redoing the finished node. gpu-4, whose old
// modules nothing holds, gets its new driver without a reboot; the others'
// modules are held, so they reboot.
func TestUpgradeDriverRollsThroughTheAPI(t *testing.T) {
	workers := []string{"gpu-1", "gpu-2", "gpu-3", "gpu-4"}
	c, cs, kc := kubeSetup(t, workers...)
	gpuWorkloads(t, c, "gpu-3")
	train := trainingPod(t, cs)
	sim, err := newUpgradeSim(t.TempDir(), workers, []string{"cp-1"}, "580.95.05")
	if err != nil {
		t.Fatal(err)
	}
	if err := sim.Update("gpu-2", func(h *scriptsim.Host) { h.BreakAtBoot = true }); err != nil {
		t.Fatal(err)
	}
	// gpu-4's modules can be swapped: its new driver loads without a reboot.
	if err := sim.Update("gpu-4", func(h *scriptsim.Host) { h.RuntimeModules = true }); err != nil {
		t.Fatal(err)
	}
	watch := watchUnschedulable(t, cs)
	ctx := context.Background()
	statePath := filepath.Join(t.TempDir(), "up.driver.json")
	state := upgrade.NewState(statePath, "up", "up.yaml", upgrade.Target{Driver: "590.48.01"}, time.Now())
	doc := upgradeInventory(workers...)

	// A dry-run: the order, two waves of two, every node's steps and
	// scripts as planned events; nothing changes anywhere.
	sum, f, rec := runUpgradeWith(t, ctx, doc, kc, sim, upgrade.Options{Budget: upgrade.Budget{Percent: 50}}, true)
	if got := f.Upgrade.Order(); !slices.Equal(got, workers) || f.Upgrade.Waves() != 2 || sum.Err() != nil {
		t.Errorf("dry-run: order %v in %d waves, %v", got, f.Upgrade.Waves(), sum.Err())
	}
	planned := map[string][]string{}
	for _, e := range rec.OfType(event.Planned) {
		planned[e.Host] = append(planned[e.Host], e.Step)
	}
	for _, w := range workers {
		p := strings.Join(planned[w], "; ")
		switch {
		case w == "gpu-3": // its training is asked to checkpoint, then the node is left alone
			if p != "cordon gpu-3; checkpoint default/"+train.Name+"; uncordon gpu-3" {
				t.Errorf("dry-run's plan for gpu-3, which runs training: %s", p)
			}
		case !strings.Contains(p, "cordon "+w) || !strings.Contains(p, "drain "+w) || !strings.Contains(p, "driver 590.48.01") || !strings.Contains(p, "swap the kernel modules for driver 590.48.01") || !strings.Contains(p, "uncordon "+w):
			t.Errorf("dry-run's plan for %s: %s", w, p)
		}
		if writes := sim.Host(w).Writes; len(writes) > 0 {
			t.Errorf("the dry-run changed %s: %v", w, writes)
		}
	}
	if most, at := watch.max(); most != 0 {
		t.Errorf("the dry-run cordoned %v", at)
	}

	// Run 1: gpu-1 is upgraded; gpu-2 fails verification, stays cordoned,
	// and the rollout stops before gpu-3 and gpu-4.
	sum, f, _ = runUpgrade(t, ctx, doc, kc, sim, upgrade.Options{Budget: upgrade.Budget{N: 1}, State: state})
	if h := hostResult(sum, "gpu-1"); h.Status != engine.StatusOK {
		t.Fatalf("gpu-1: %+v", h)
	}
	h2 := hostResult(sum, "gpu-2")
	if h2.Status != engine.StatusFailed || h2.Phase != nvidia.PhaseVerify {
		t.Fatalf("gpu-2: %s in %s (%v), want failed in %s", h2.Status, h2.Phase, h2.Err, nvidia.PhaseVerify)
	}
	for _, w := range []string{"gpu-3", "gpu-4"} {
		if h := hostResult(sum, w); h.Status != engine.StatusSkipped || !strings.Contains(h.Reason, "gpu-2 failed and stays cordoned") {
			t.Errorf("%s: %s %q, want skipped: the rollout stopped", w, h.Status, h.Reason)
		}
		if writes := sim.Host(w).Writes; len(writes) > 0 {
			t.Errorf("%s was changed after the rollout stopped: %v", w, writes)
		}
	}
	if got := f.Upgrade.Order(); !slices.Equal(got, []string{"gpu-1", "gpu-2"}) {
		t.Errorf("order %v", got)
	}
	n2, err := cs.CoreV1().Nodes().Get(ctx, "gpu-2", metav1.GetOptions{})
	if err != nil || !n2.Spec.Unschedulable || !upgrade.CordonedByUs(n2) {
		t.Errorf("gpu-2 after failing verification: unschedulable %v, gpukit's mark %v (%v)", n2.Spec.Unschedulable, n2.Annotations, err)
	}
	if st, _ := state.Node("gpu-2"); st.Status != upgrade.Failed {
		t.Errorf("state of gpu-2: %+v", st)
	}
	if st, _ := state.Node("gpu-1"); st.Status != upgrade.Done {
		t.Errorf("state of gpu-1: %+v", st)
	}
	if got := sim.Host("gpu-1"); got.Loaded != "590.48.01" || !slices.Contains(got.Writes, "install the driver") ||
		!slices.Contains(got.Writes, "swap the driver's kernel modules") || !slices.Contains(got.Writes, "reboot") {
		t.Errorf("gpu-1: driver %s loaded, writes %v", got.Loaded, got.Writes)
	}
	if got := sim.Host("cp-1").Writes; !slices.Equal(got, []string{"etcd snapshot"}) {
		t.Errorf("the control plane's writes: %v, want only the etcd snapshot", got)
	}
	if !strings.HasPrefix(state.Snapshot, "cp-1:"+etcd.SnapshotDir+"/before-driver-590.48.01-") {
		t.Errorf("snapshot recorded as %q", state.Snapshot)
	}

	// Fixed, then resumed: gpu-2 finishes, gpu-3 (training) is handed back
	// untouched, gpu-4 is upgraded; gpu-1 is not redone.
	if err := sim.Update("gpu-2", func(h *scriptsim.Host) { h.BreakAtBoot, h.SMIBroken = false, false }); err != nil {
		t.Fatal(err)
	}
	before := len(sim.Host("gpu-1").Writes)
	resumed, err := upgrade.LoadState(statePath)
	if err != nil {
		t.Fatal(err)
	}
	sum, f, _ = runUpgrade(t, ctx, doc, kc, sim, upgrade.Options{Budget: upgrade.Budget{N: 1}, State: resumed})
	for _, w := range []string{"gpu-2", "gpu-4"} {
		if h := hostResult(sum, w); h.Status != engine.StatusOK {
			t.Errorf("%s after the resume: %s in %s: %v %s", w, h.Status, h.Phase, h.Err, h.Reason)
		}
	}
	if got := sim.Host("gpu-4"); got.Loaded != "590.48.01" || got.Boot != 1 || slices.Contains(got.Writes, "reboot") ||
		!slices.Contains(got.Writes, "swap the driver's kernel modules") || !got.PersistencedActive {
		t.Errorf("gpu-4: driver %s loaded, boot %d, persistence daemon %v, writes %v; want swapped without a reboot", got.Loaded, got.Boot, got.PersistencedActive, got.Writes)
	}
	if h := hostResult(sum, "gpu-1"); h.Status != engine.StatusSkipped || len(sim.Host("gpu-1").Writes) != before {
		t.Errorf("gpu-1 after the resume: %s %q, writes %v: redone", h.Status, h.Reason, sim.Host("gpu-1").Writes[before:])
	}
	if h := hostResult(sum, "gpu-3"); h.Status != engine.StatusSkipped || !strings.Contains(h.Reason, "training still running (default/"+train.Name+")") {
		t.Errorf("gpu-3: %s %q, want left alone for its training", h.Status, h.Reason)
	}
	if writes := sim.Host("gpu-3").Writes; len(writes) > 0 {
		t.Errorf("gpu-3 runs training and was changed: %v", writes)
	}
	if got := trainingPod(t, cs); got.UID != train.UID || got.Status.Phase != corev1.PodRunning || got.DeletionTimestamp != nil || got.Spec.NodeName != "gpu-3" {
		t.Errorf("the training pod was disturbed: %s %s on %s (deleting %v)", got.UID, got.Status.Phase, got.Spec.NodeName, got.DeletionTimestamp)
	}
	if len(sim.Host("cp-1").Writes) != 1 {
		t.Errorf("the snapshot was taken again on resume: %v", sim.Host("cp-1").Writes)
	}
	for _, w := range workers {
		n, err := cs.CoreV1().Nodes().Get(ctx, w, metav1.GetOptions{})
		if err != nil || n.Spec.Unschedulable || n.Annotations[upgrade.AnnotationCordoned] != "" {
			t.Errorf("%s after the resume: unschedulable %v, annotations %v (%v)", w, n.Spec.Unschedulable, n.Annotations, err)
		}
	}
	if most, at := watch.max(); most > 1 {
		t.Errorf("%d GPU nodes were unschedulable at once (%v); --max-unavailable 1", most, at)
	} else if most != 1 {
		t.Errorf("the watch saw no node cordoned (max %d)", most)
	}
	// Serving pods went through their PDB: three Running again.
	waitPods(t, c, 4)

	// A third run with --force takes gpu-3 too: its training pod is
	// evicted (after its hook), and it is upgraded.
	sum, _, _ = runUpgrade(t, ctx, doc, kc, sim, upgrade.Options{Budget: upgrade.Budget{N: 1}, Force: true, Drain: upgrade.DrainOptions{Force: true, Timeout: time.Minute, GracePeriod: -1}})
	if h := hostResult(sum, "gpu-3"); h.Status != engine.StatusOK || sim.Host("gpu-3").Loaded != "590.48.01" {
		t.Errorf("gpu-3 with --force: %s in %s %v, driver %s", h.Status, h.Phase, h.Err, sim.Host("gpu-3").Loaded)
	}
	// And a fourth changes nothing.
	sum, f, _ = runUpgrade(t, ctx, doc, kc, sim, upgrade.Options{Budget: upgrade.Budget{N: 1}})
	counts := sum.HostCounts()
	if counts.Changed != 0 || counts.Failed != 0 || len(f.Upgrade.Order()) != 0 {
		t.Errorf("a run on the upgraded cluster: %+v, order %v; want nothing changed", counts, f.Upgrade.Order())
	}
}

// TestUpgradeChild is the gpukit the SIGKILL test kills: it runs only as
// that test's child process.
func TestUpgradeChild(t *testing.T) {
	dir := os.Getenv("GPUKIT_UPGRADE_CHILD")
	if dir == "" {
		t.Skip("the SIGKILL test's child process")
	}
	kc, err := os.ReadFile(filepath.Join(dir, "kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(dir, "inventory.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	state, err := upgrade.LoadState(filepath.Join(dir, "state.json"))
	if err != nil {
		t.Fatal(err)
	}
	sim := scriptsim.Open(filepath.Join(dir, "sim"))
	runUpgrade(t, context.Background(), string(doc), kc, sim, upgrade.Options{Budget: upgrade.Budget{N: 1}, State: state})
	t.Fatal("the child finished the rollout: it was meant to be killed")
}

// gpukit killed with SIGKILL mid-rollout (gpu-2 rebooting) leaves gpu-2
// cordoned and in progress; --resume finishes the rollout without redoing
// gpu-1, and every node ends schedulable.
func TestUpgradeDriverResumesAfterSIGKILL(t *testing.T) {
	workers := []string{"gpu-1", "gpu-2", "gpu-3"}
	c, cs, kc := kubeSetup(t, workers...)
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "sim"), 0o700); err != nil {
		t.Fatal(err)
	}
	sim, err := newUpgradeSim(filepath.Join(dir, "sim"), workers, []string{"cp-1"}, "580.95.05")
	if err != nil {
		t.Fatal(err)
	}
	// gpu-2's reboot takes a while (refused dials at 10 ms): time to kill.
	if err := sim.Update("gpu-2", func(h *scriptsim.Host) { h.RebootDials = 3000 }); err != nil {
		t.Fatal(err)
	}
	doc := upgradeInventory(workers...)
	statePath := filepath.Join(dir, "state.json")
	if err := upgrade.NewState(statePath, "up", "up.yaml", upgrade.Target{Driver: "590.48.01"}, time.Now()).Save(); err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{"kubeconfig": kc, "inventory.yaml": []byte(doc)} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	child := exec.Command(os.Args[0], "-test.run=^TestUpgradeChild$", "-test.count=1")
	child.Env = append(os.Environ(), "GPUKIT_UPGRADE_CHILD="+dir)
	out, err := os.Create(filepath.Join(dir, "child.out"))
	if err != nil {
		t.Fatal(err)
	}
	child.Stdout, child.Stderr = out, out
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for !slices.Contains(sim.Host("gpu-2").Writes, "reboot") {
		if time.Now().After(deadline) {
			_ = child.Process.Kill()
			b, _ := os.ReadFile(filepath.Join(dir, "child.out"))
			t.Fatalf("gpu-2 did not reach its reboot within 2 minutes:\n%s", b)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := child.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = child.Wait()
	n2, err := cs.CoreV1().Nodes().Get(context.Background(), "gpu-2", metav1.GetOptions{})
	if err != nil || !upgrade.CordonedByUs(n2) {
		t.Fatalf("gpu-2 after the kill: unschedulable %v, annotations %v (%v)", n2.Spec.Unschedulable, n2.Annotations, err)
	}
	state, err := upgrade.LoadState(statePath)
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := state.Node("gpu-2"); st.Status != upgrade.InProgress {
		t.Fatalf("state of gpu-2 after the kill: %+v", st)
	}
	if st, _ := state.Node("gpu-1"); st.Status != upgrade.Done {
		t.Fatalf("state of gpu-1 after the kill: %+v", st)
	}
	gpu1 := len(sim.Host("gpu-1").Writes)
	if err := sim.Update("gpu-2", func(h *scriptsim.Host) { h.Rebooting = min(h.Rebooting, 1) }); err != nil {
		t.Fatal(err)
	}
	watch := watchUnschedulable(t, cs)
	sum, f, _ := runUpgrade(t, context.Background(), doc, kc, sim, upgrade.Options{Budget: upgrade.Budget{N: 1}, State: state})
	if err := sum.Err(); err != nil {
		t.Fatalf("resume: %v", err)
	}
	if got := f.Upgrade.Order(); !slices.Equal(got, []string{"gpu-2", "gpu-3"}) {
		t.Errorf("the resumed rollout took %v, want gpu-2 (left cordoned) then gpu-3", got)
	}
	if got := sim.Host("gpu-1").Writes; len(got) != gpu1 {
		t.Errorf("gpu-1 was redone: %v", got[gpu1:])
	}
	for _, w := range workers {
		if got := sim.Host(w).Loaded; got != "590.48.01" {
			t.Errorf("%s runs driver %s", w, got)
		}
		n, err := cs.CoreV1().Nodes().Get(context.Background(), w, metav1.GetOptions{})
		if err != nil || n.Spec.Unschedulable || n.Annotations[upgrade.AnnotationCordoned] != "" {
			t.Errorf("%s: unschedulable %v, annotations %v (%v)", w, n.Spec.Unschedulable, n.Annotations, err)
		}
		if st, _ := state.Node(w); st.Status != upgrade.Done {
			t.Errorf("state of %s: %+v", w, st)
		}
	}
	if most, at := watch.max(); most > 1 {
		t.Errorf("%d GPU nodes unschedulable at once (%v)", most, at)
	}
	_ = c
}
