package flow

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpukit/gpukit/pkg/upgrade"
	"github.com/gpukit/gpukit/test/cluster"
)

// TestBenchUpgradeRollout is bench/upgrade.sh's measurement, not a test:
// it runs only with GPUKIT_BENCH=1. A rollout over N kwok GPU nodes
// (GPUKIT_BENCH_NODES, default 100) at --max-unavailable 10%, each node with
// a serving pod behind a PodDisruptionBudget, the hosts simulated (their
// steps instant: what is measured is the rollout's orchestration through
// the API), against the peer an operator scripts today on the same cluster:
// `kubectl drain` then `kubectl uncordon` of the same nodes, the same number
// at once. The pods' grace period is 1 s (kwok deletes a pod at its
// deletion timestamp, with jitter: 30 s would be all either side measures). Reported: wall time and API requests, per node, and the ratios.
func TestBenchUpgradeRollout(t *testing.T) {
	if os.Getenv("GPUKIT_BENCH") != "1" {
		t.Skip("a benchmark: bench/upgrade.sh runs it (GPUKIT_BENCH=1)")
	}
	n := 100
	if v, err := strconv.Atoi(os.Getenv("GPUKIT_BENCH_NODES")); err == nil && v > 0 {
		n = v
	}
	workers := make([]string, n)
	for i := range workers {
		workers[i] = fmt.Sprintf("gpu-%03d", i+1)
	}
	c, cs, kc := kubeSetup(t, workers...)
	c.Apply(t, fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: serve, namespace: default}
spec:
  replicas: %d
  selector: {matchLabels: {app: serve}}
  template:
    metadata: {labels: {app: serve}}
    spec:
      terminationGracePeriodSeconds: 1
      topologySpreadConstraints:
      - {maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: ScheduleAnyway, labelSelector: {matchLabels: {app: serve}}}
      containers:
      - {name: s, image: registry.example/serve:1, resources: {limits: {nvidia.com/gpu: 1}}}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: serve, namespace: default}
spec:
  maxUnavailable: 10%%
  selector: {matchLabels: {app: serve}}
`, n))
	waitPods(t, c, n)
	sim, err := newUpgradeSim(t.TempDir(), workers, []string{"cp-1"}, "580.95.05")
	if err != nil {
		t.Fatal(err)
	}
	watch := watchUnschedulable(t, cs)
	start := time.Now()
	sum, f, _ := runUpgrade(t, context.Background(), upgradeInventory(workers...), kc, sim,
		upgrade.Options{Budget: upgrade.Budget{Percent: 10}, SkipEtcdSnapshot: true, Poll: time.Second})
	took := time.Since(start)
	if err := sum.Err(); err != nil {
		t.Fatalf("rollout: %v", err)
	}
	most, _ := watch.max()
	reqs := f.Upgrade.APIRequests()
	waitPods(t, c, n)

	// The peer: kubectl drain, then uncordon, a wave of 10% at a time.
	kubectl := filepath.Join(cluster.Binaries(t), "kubectl")
	wave := max(1, n/10)
	var mu sync.Mutex
	peerReqs := 0
	run := func(args ...string) {
		cmd := exec.Command(kubectl, append([]string{"--kubeconfig", c.Kubeconfig, "-v=6"}, args...)...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			t.Errorf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out.String())
		}
		count := 0
		sc := bufio.NewScanner(&out)
		for sc.Scan() {
			if strings.Contains(sc.Text(), `"Response"`) {
				count++
			}
		}
		mu.Lock()
		peerReqs += count
		mu.Unlock()
	}
	start = time.Now()
	for i := 0; i < n; i += wave {
		var wg sync.WaitGroup
		for _, w := range workers[i:min(i+wave, n)] {
			wg.Go(func() {
				run("drain", w, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=5m")
				run("uncordon", w)
			})
		}
		wg.Wait()
	}
	peer := time.Since(start)
	waitPods(t, c, n)

	per := func(d time.Duration) string { return fmt.Sprintf("%.2f s", d.Seconds()/float64(n)) }
	report := fmt.Sprintf(`| %d kwok GPU nodes, a wave of %d at a time | wall | per node | API requests | per node |
|---|---|---|---|---|
| gpukit upgrade driver --max-unavailable 10%% (hosts simulated) | %.1f s | %s | %d | %.1f |
| kubectl drain + uncordon, %d at a time | %.1f s | %s | %d | %.1f |
| ratio gpukit / kubectl | %.2f | | %.2f | |

gpukit: %d waves, at most %d GPU nodes unschedulable at once (budget %d); every node also got a
driver check, the NVIDIA phases and verification over its (simulated) SSH connection, and its
labels reconciled; the peer drains and uncordons only.
`, n, wave, took.Seconds(), per(took), reqs, float64(reqs)/float64(n),
		wave, peer.Seconds(), per(peer), peerReqs, float64(peerReqs)/float64(n),
		took.Seconds()/peer.Seconds(), float64(reqs)/float64(max(1, peerReqs)),
		f.Upgrade.Waves(), most, wave)
	t.Log("\n" + report)
	if out := os.Getenv("GPUKIT_BENCH_OUT"); out != "" {
		if err := os.WriteFile(out, []byte(report), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
