package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gpukit/gpukit/internal/cli"
	"github.com/gpukit/gpukit/pkg/event"
	"github.com/gpukit/gpukit/test/cluster"
	"github.com/gpukit/gpukit/test/lab"
)

// `gpukit upgrade kubernetes` on a real kubeadm cluster of three lab hosts
// (a control plane, two workers), built by gpukit init at the previous
// minor there are modules for (1.36) from the site's mirrors, which hold
// the newest (1.37) too: a serving Deployment (2 replicas, a
// PodDisruptionBudget) and a training Job (gpukit.dev/training, pinned to
// lab-3) run throughout, and the API is polled every second from this
// machine. gpukit is killed (SIGKILL) in the middle of lab-2; --resume
// finishes: the control plane first, then the workers one at a time, the
// training waited for (--wait-for-jobs), never evicted. Every node ends at
// the new release and Ready; a skipped minor is refused before any host; a
// second run changes nothing. The lab has no device plugin: the nodes
// advertise no nvidia.com/gpu, so the GPU checks wait for Ready only.
func TestLabKubernetesUpgrade(t *testing.T) {
	cluster.Require(t)
	lab.Require(t)
	versions := cluster.Versions(t)
	to := strings.TrimPrefix(versions[0], "v")
	from := ""
	for _, v := range versions[1:] {
		if cluster.Minor(v) != cluster.Minor(versions[0]) {
			from = strings.TrimPrefix(v, "v")
			break
		}
	}
	if from == "" || !strings.HasPrefix(cluster.Minor("v"+from), "v1.") {
		t.Fatalf("no Kubernetes module of the minor before %s: test/k8s has %v", to, versions)
	}
	l := lab.Start(t, lab.Options{Hosts: 3, Kube: true})
	dir := t.TempDir()
	site := cluster.NewSite(t, l, from, to)
	inv := filepath.Join(dir, "kubernetes.yaml")
	if err := site.WriteInventory(l.Inventory, inv, cluster.LabKubernetes); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for _, h := range l.Hosts {
		wg.Go(func() { l.UseDebianMirror(t, h.Name) })
	}
	wg.Wait()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	start := time.Now()
	r := runInit(t, "init", "-i", inv, "--kubeconfig-out", kubeconfig)
	if r.code != cli.ExitOK || r.counts.Changed != 3 {
		t.Fatalf("init at %s: exit %d %+v %v\n%s", from, r.code, r.counts, r.failed, r.out)
	}
	t.Logf("init of 3 hosts at Kubernetes %s: %s", from, time.Since(start).Round(100*time.Millisecond))
	kubectl := func(t *testing.T, args ...string) string {
		t.Helper()
		out, err := exec.Command(filepath.Join(cluster.Binaries(t), "kubectl"), append([]string{"--kubeconfig", kubeconfig}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}

	t.Run("a skipped minor and a downgrade are refused before any host", func(t *testing.T) {
		for _, c := range []struct{ version, want string }{
			{"1.39.0", "skips a minor"}, {"1.35.4", "downgrade"},
		} {
			r := runInit(t, "upgrade", "kubernetes", "-i", inv, "--version", c.version, "--state", filepath.Join(t.TempDir(), "s.json"))
			if r.code != cli.ExitUsage || !strings.Contains(r.out, c.want) || len(r.events) != 0 {
				t.Errorf("--version %s: exit %d, %d events\n%s", c.version, r.code, len(r.events), r.out)
			}
		}
	})

	t.Run("a dry-run names the order and changes nothing", func(t *testing.T) {
		r := runInit(t, "upgrade", "kubernetes", "-i", inv, "--version", to, "--dry-run")
		if r.code != cli.ExitOK || len(r.writeSteps()) != 0 {
			t.Fatalf("dry-run: exit %d, writes %v\n%s", r.code, r.writeSteps(), r.out)
		}
		planned := map[string]int{}
		for _, e := range r.events {
			if e.Type == event.Planned {
				planned[e.Host]++
			}
		}
		if planned["lab-1"] == 0 || planned["lab-2"] == 0 || planned["lab-3"] == 0 {
			t.Errorf("planned steps by host: %v, want every node's", planned)
		}
		if !strings.Contains(r.out, `"order":["lab-1","lab-2","lab-3"]`) {
			t.Errorf("the dry-run's order:\n%s", r.out[max(0, len(r.out)-600):])
		}
		if got := kubectl(t, "get", "nodes", "-o", "jsonpath={.items[*].status.nodeInfo.kubeletVersion}"); got != strings.TrimSpace(strings.Repeat("v"+from+" ", 3)) {
			t.Errorf("after the dry-run: %s", got)
		}
	})

	image := mirrorBusybox(t, l, "lab-2")
	kubectlIn(t, kubeconfig, `apiVersion: apps/v1
kind: Deployment
metadata: {name: serve, namespace: default}
spec:
  replicas: 2
  selector: {matchLabels: {app: serve}}
  template:
    metadata: {labels: {app: serve}}
    spec:
      terminationGracePeriodSeconds: 1
      containers: [{name: main, image: `+image+`, command: [sh, -c, 'while :; do sleep 1; done']}]
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
      annotations: {gpukit.dev/training: "true"}
    spec:
      restartPolicy: Never
      nodeSelector: {kubernetes.io/hostname: lab-3}
      terminationGracePeriodSeconds: 1
      containers: [{name: main, image: `+image+`, command: [sh, -c, 'until [ -f /done ]; do sleep 1; done; echo trained']}]
`, "apply", "-f", "-")
	kubectl(t, "rollout", "status", "deployment/serve", "--timeout=180s")
	kubectl(t, "wait", "--for=condition=Ready", "pod", "-l", "job-name=train", "--timeout=180s")
	trainStarted := time.Now()

	gaps := pollAPI(t, kubeconfig)
	state := filepath.Join(dir, "upgrade.json")
	args := []string{"upgrade", "kubernetes", "-i", inv, "--state", state, "--wait-for-jobs", "10m", "--drain-timeout", "3m"}

	t.Run("killed in the middle of lab-2, resumed: every node at the new release", func(t *testing.T) {
		start := time.Now()
		logDir := t.TempDir()
		killed := killAt(t, append(append([]string{}, args...), "--version", to, "--log-dir", logDir), func(e event.Event) bool {
			return e.Type == event.StepStart && e.Host == "lab-2" && e.Phase == "kubernetes/upgrade-kubelet"
		})
		t.Logf("gpukit killed (SIGKILL) in lab-2's kubernetes/upgrade-kubelet after %s", killed.Round(100*time.Millisecond))
		// Each node's steps in the killed run, as its log timed them.
		for _, h := range []string{"lab-1", "lab-2"} {
			b, _ := os.ReadFile(hostLog(t, initResult{logDir: logDir}, h))
			var took []string
			for line := range strings.Lines(string(b)) {
				// "23:57:07.823 lab-1 upgrade/uncordon: ok in 11ms"
				if f := strings.Fields(line); len(f) == 6 && f[1] == h && f[3] == "ok" && f[4] == "in" {
					took = append(took, strings.TrimSuffix(f[2], ":")+" "+f[5])
				}
			}
			t.Logf("%s in the killed run: %s", h, strings.Join(took, ", "))
		}
		if got := kubectl(t, "get", "node", "lab-2", "-o", "jsonpath={.spec.unschedulable}"); got != "true" {
			t.Errorf("lab-2 after the kill: unschedulable %q, want true (the run was in its middle)", got)
		}
		// The training finishes on its own 20 s after the rollout cordoned
		// its node: the rollout waits for it, and only then drains lab-3.
		finished := make(chan string, 1)
		go func() {
			bin := filepath.Join(cluster.Binaries(t), "kubectl")
			for deadline := time.Now().Add(15 * time.Minute); time.Now().Before(deadline); time.Sleep(2 * time.Second) {
				out, _ := exec.Command(bin, "--kubeconfig", kubeconfig, "get", "node", "lab-3", "-o", "jsonpath={.spec.unschedulable}").Output()
				if string(out) == "true" {
					time.Sleep(20 * time.Second)
					out, err := exec.Command(bin, "--kubeconfig", kubeconfig, "exec", "job/train", "--", "sh", "-c", ": >/done").CombinedOutput()
					finished <- fmt.Sprintf("%v %s", err, out)
					return
				}
			}
			finished <- "lab-3 was never cordoned"
		}()
		resumed := time.Now()
		r := runInit(t, append(append([]string{}, args...), "--resume")...)
		if got := <-finished; got != "<nil> " {
			t.Errorf("finishing the training: %s", got)
		}
		if r.code != cli.ExitOK {
			t.Fatalf("--resume: exit %d %+v %v\n%s", r.code, r.counts, r.failed, r.out)
		}
		t.Logf("upgrade %s -> %s: %s in all (the resumed run %s)", from, to, time.Since(start).Round(100*time.Millisecond), time.Since(resumed).Round(100*time.Millisecond))
		for _, h := range []string{"lab-1", "lab-2", "lab-3"} {
			t.Logf("%s in the resumed run: %s", h, hostTime(r, h))
		}
		if b, _ := os.ReadFile(hostLog(t, r, "lab-3")); !strings.Contains(string(b), "waiting up to 10m0s for the training on lab-3 to finish") {
			t.Errorf("the rollout did not wait for lab-3's training:\n%s", b)
		}
	})

	t.Run("the training was never evicted; the API answered", func(t *testing.T) {
		// backoffLimit 0: an evicted pod would have failed the Job. The
		// drain that followed removed the finished pod.
		if got := kubectl(t, "get", "job", "train", "-o", "jsonpath={.status.succeeded}/{.status.failed}"); got != "1/" {
			t.Errorf("the training Job: succeeded, failed %q, want one pod succeeded, none failed", got)
		}
		if got := kubectl(t, "get", "events", "--field-selector", "involvedObject.kind=Pod,reason=Evicted", "-o", "name"); got != "" {
			t.Errorf("pods were evicted for pressure: %s", got)
		}
		t.Logf("the training ran %s, until 20 s after its node was cordoned", time.Since(trainStarted).Round(time.Second))
		longest, polls, failed := gaps()
		t.Logf("API polled every second during the upgrade: %d polls, %d unanswered, the longest gap %s", polls, failed, longest.Round(100*time.Millisecond))
	})

	t.Run("every node at the new release and Ready, packages held", func(t *testing.T) {
		kubectl(t, "wait", "--for=condition=Ready", "node", "--all", "--timeout=120s")
		nodes := kubectl(t, "get", "nodes", "-o", `jsonpath={range .items[*]}{.metadata.name} {.status.nodeInfo.kubeletVersion} {.spec.unschedulable}{"\n"}{end}`)
		for _, line := range strings.Split(nodes, "\n") {
			if f := strings.Fields(line); len(f) != 2 || f[1] != "v"+to {
				t.Errorf("node %q, want v%s and schedulable", line, to)
			}
		}
		if v := kubectl(t, "version", "-o", "json"); !strings.Contains(v, `"gitVersion": "v`+to+`"`) {
			t.Errorf("the API server after the upgrade:\n%s", v)
		}
		for _, h := range []string{"lab-1", "lab-2", "lab-3"} {
			if got := l.SSH(t, h, "dpkg-query -W -f '${Version} ' kubeadm kubelet kubectl; apt-mark showhold | grep -c '^kube'"); got != strings.Repeat(to+"-1.1 ", 3)+"3" {
				t.Errorf("%s's packages: %q", h, got)
			}
		}
		if got := kubectl(t, "-n", "kube-system", "get", "pods", "-l", "component=kube-apiserver", "-o", "jsonpath={.items[*].spec.containers[0].image}"); !strings.HasSuffix(got, ":v"+to) {
			t.Errorf("the API server's image: %q", got)
		}
		kubectl(t, "rollout", "status", "deployment/serve", "--timeout=120s")
	})

	t.Run("a second run changes nothing", func(t *testing.T) {
		r := runInit(t, "upgrade", "kubernetes", "-i", inv, "--version", to, "--state", filepath.Join(t.TempDir(), "again.json"), "--write-inventory")
		if r.code != cli.ExitOK || r.counts.Changed != 0 {
			t.Errorf("second run: exit %d %+v writes %v\n%s", r.code, r.counts, r.writeSteps(), r.out)
		}
		if b, _ := os.ReadFile(inv); !strings.Contains(string(b), "kubernetes: "+to) && !strings.Contains(string(b), `kubernetes: "`+to+`"`) {
			t.Errorf("--write-inventory did not record %s:\n%s", to, b)
		}
	})
}

// killAt runs gpukit (a built binary, -o json; args give its --log-dir)
// with args and kills it with
// SIGKILL at the first event stop says yes to; it returns how long it ran.
func killAt(t *testing.T, args []string, stop func(event.Event) bool) time.Duration {
	t.Helper()
	bin := buildGpukit(t)
	cmd := exec.Command(bin, append(args, "-o", "json")...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	var seen []string
	for sc.Scan() {
		var e event.Event
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			continue
		}
		if e.Type == event.HostFailed {
			seen = append(seen, e.Host+": "+e.Phase+": "+e.Err)
		}
		if stop(e) {
			took := time.Since(start)
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			return took
		}
	}
	err = cmd.Wait()
	t.Fatalf("gpukit %s ended (%v) before the event to kill it at; failed: %v\n%s", strings.Join(args, " "), err, seen, stderr.String())
	return 0
}

// pollAPI asks the API server for its version every second from this
// machine until the test ends; gaps says the longest stretch without an
// answer so far, how many polls and how many went unanswered.
func pollAPI(t *testing.T, kubeconfig string) (gaps func() (time.Duration, int, int)) {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Timeout = 2 * time.Second
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var (
		mu                sync.Mutex
		longest           time.Duration
		polls, unanswered int
		lastOK            = time.Now()
		down              bool
		done              = make(chan struct{})
		worstStarted      time.Time
	)
	go func() {
		defer close(done)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			_, err := c.Discovery().ServerVersion()
			now := time.Now()
			mu.Lock()
			polls++
			if err != nil {
				unanswered++
				down = true
			} else {
				if down && now.Sub(lastOK) > longest {
					longest, worstStarted = now.Sub(lastOK), lastOK
				}
				down, lastOK = false, now
			}
			mu.Unlock()
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return func() (time.Duration, int, int) {
		mu.Lock()
		defer mu.Unlock()
		if !worstStarted.IsZero() {
			t.Logf("the longest gap began at %s", worstStarted.Format(time.TimeOnly))
		}
		return longest, polls, unanswered
	}
}

// hostLog is host's log file of run r.
func hostLog(t *testing.T, r initResult, host string) string {
	t.Helper()
	logs, _ := filepath.Glob(filepath.Join(r.logDir, "*", host+".log"))
	if len(logs) != 1 {
		t.Fatalf("%s's log in %s: %v", host, r.logDir, logs)
	}
	return logs[0]
}

// hostTime is how long host took in a run: from its first event to its last.
func hostTime(r initResult, host string) string {
	var first, last time.Time
	for _, e := range r.events {
		if e.Host != host {
			continue
		}
		if first.IsZero() {
			first = e.Time
		}
		last = e.Time
	}
	return fmt.Sprint(last.Sub(first).Round(100 * time.Millisecond))
}
