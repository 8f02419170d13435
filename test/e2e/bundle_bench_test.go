package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpukit/gpukit/internal/cli"
	"github.com/gpukit/gpukit/test/cluster"
	"github.com/gpukit/gpukit/test/lab"
)

// TestBenchBundle measures an air-gapped site's bundle against the site's
// mirrors, in one run (bench/bundle.sh; GPUKIT_BENCH=1 only, nothing is
// asserted about time): the demo's site twice, lab A installing from the
// lab's mirrors as they are (the peer: a site that mirrors every source),
// lab B from a bundle made of the same sources and nothing else. It
// reports the bundle's size by kind, its create time (first run, second
// run), and both inits' wall times and their ratio.
func TestBenchBundle(t *testing.T) {
	if os.Getenv("GPUKIT_BENCH") != "1" {
		t.Skip("a benchmark: bench/bundle.sh runs it (GPUKIT_BENCH=1)")
	}
	cluster.Require(t)
	lab.Require(t)
	var rows []string
	row := func(format string, args ...any) {
		rows = append(rows, fmt.Sprintf(format, args...))
		t.Logf(format, args...)
	}

	la, _, invA := demoSite(t, false, false)
	var wg sync.WaitGroup
	for _, h := range []string{"lab-1", "lab-2", "lab-3"} {
		wg.Go(func() { la.UseDebianMirror(t, h) })
	}
	wg.Wait()
	began := time.Now()
	r := runInit(t, "init", "-i", invA, "--kubeconfig-out", filepath.Join(t.TempDir(), "a.kubeconfig"))
	if r.code != cli.ExitOK {
		t.Fatalf("init from the mirrors: exit %d\n%s", r.code, r.out)
	}
	fromMirrors := time.Since(began)

	out := filepath.Join(t.TempDir(), "bundle")
	mirror := la.DebianMirror(t)
	create := func() (time.Duration, bundleCreated) {
		began := time.Now()
		code, stdout, stderr := run(t, "bundle", "create", "-i", invA, out, "-o", "json", "--os-mirror", "debian-12="+mirror.Debian+"/,"+mirror.Security+"/")
		var res bundleCreated
		lastJSON(t, stdout, &res)
		if code != cli.ExitOK {
			t.Fatalf("bundle create: exit %d %v\n%s", code, res.Missing, stderr)
		}
		return time.Since(began), res
	}
	first, res := create()
	second, _ := create()
	var total int64
	row("| kind | files | size |")
	row("|---|---|---|")
	for _, k := range res.Kinds {
		total += k.Bytes
		row("| %s | %d | %.1f MiB |", k.Kind, k.Files, float64(k.Bytes)/(1<<20))
	}
	row("| all | | %.1f MiB |", float64(total)/(1<<20))
	row("")
	row("bundle create: %s the first time (its .debs through the lab's Debian mirror, a cache that may hold them already), %s the second (nothing fetched)",
		first.Round(100*time.Millisecond), second.Round(100*time.Millisecond))

	lb, _, invB := demoSite(t, false, false)
	airGap(t, lb)
	offline := offlineInventory(t, invB, out)
	bin := buildGpukit(t)
	began = time.Now()
	r = runInit(t, "init", "-i", offline, "--gpukit-binary", bin, "--kubeconfig-out", filepath.Join(t.TempDir(), "b.kubeconfig"))
	if r.code != cli.ExitOK {
		t.Fatalf("init from the bundle: exit %d\n%s", r.code, r.out)
	}
	fromBundle := time.Since(began)
	row("")
	row("| gpukit init, 3 hosts (NVIDIA stack, kubeadm, flannel) | wall | ratio |")
	row("|---|---|---|")
	row("| from the site's mirrors (lab A) | %s | 1.00 |", fromMirrors.Round(100*time.Millisecond))
	row("| from the bundle only (lab B, cut off from the mirrors; bundle/serve %s of it) | %s | %.2f |",
		phaseTime(r, "bundle/serve"), fromBundle.Round(100*time.Millisecond), fromBundle.Seconds()/fromMirrors.Seconds())
	if p := os.Getenv("GPUKIT_BENCH_OUT"); p != "" {
		md := "# gpukit bundle: the demo's site (" + time.Now().UTC().Format(time.RFC3339) + ")\n\n" + strings.Join(rows, "\n") + "\n"
		if err := os.WriteFile(p, []byte(md), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
