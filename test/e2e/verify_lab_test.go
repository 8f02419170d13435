package e2e

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpukit/gpukit/internal/cli"
	"github.com/gpukit/gpukit/internal/flow"
	"github.com/gpukit/gpukit/pkg/acceptance"
	"github.com/gpukit/gpukit/test/fixtures"
	"github.com/gpukit/gpukit/test/gpusim"
	"github.com/gpukit/gpukit/test/lab"
)

// gpukit verify on lab hosts over SSH, with the GPU simulator's labelled
// stand-ins of nvidia-smi, dcgmi and all_reduce_perf replaying real
// outputs: lab-2's DCGM diagnostic passes; lab-3's fails and is named (exit
// 3); the bandwidth test does not run on one-GPU hosts and says so, never
// passed; the control plane has no GPU and is left out.
func TestLabVerify(t *testing.T) {
	lab.Require(t)
	t.Parallel()
	h100 := labCapture(t, "h100-80gb-hbm3__drv590.48.01")
	diag := fixtures.Dir(t, "dcgm-diag")
	nccl := fixtures.Dir(t, "nccl-tests")
	l := lab.Start(t, lab.Options{Hosts: 3})
	for i, a := range map[int]gpusim.Acceptance{
		1: {DCGMDiag: filepath.Join(diag, "a100-sxm4-80gb-x8__dcgm3.3.3__diag-r2-pass.txt"), NCCL: filepath.Join(nccl, "h100-p5__all-reduce-mpirun-tagged.txt")},
		2: {DCGMDiag: filepath.Join(diag, "deepops-prolog__diag-r1-fail.txt")},
	} {
		installGPUSimulator(t, l, l.Hosts[i], h100)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		c, err := gpusim.DialRoot(ctx, l, l.Hosts[i].Name)
		if err != nil {
			t.Fatal(err)
		}
		if err := gpusim.InstallAcceptance(ctx, c, a); err != nil {
			t.Fatal(err)
		}
		c.Close()
		cancel()
	}
	start := time.Now()
	r := runInit(t, "verify", "-i", l.Inventory, "--level", "2")
	t.Logf("verify on 2 GPU hosts: %s", time.Since(start).Round(time.Millisecond))
	if r.code != cli.ExitHostsFailed || len(r.failed) != 1 || !strings.Contains(r.failed["lab-3"], "DCGM diagnostic level 2 failed: Deployment/Persistence Mode: Fail") {
		t.Fatalf("exit %d, failed %v\n%s", r.code, r.failed, r.out)
	}
	var res flow.VerifyResult
	lines := strings.Split(strings.TrimSpace(r.out), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.Contains(lines[i], `"type":"verify"`) {
			if err := json.Unmarshal([]byte(lines[i]), &res); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	if len(res.Nodes) != 2 || res.Passed || strings.Join(res.Failed, ",") != "lab-3" {
		t.Fatalf("result %+v", res)
	}
	for _, n := range res.Nodes {
		// lab-2 passes its diagnostic and has one GPU: nothing to
		// all-reduce; lab-3 fails its diagnostic, and its bandwidth test
		// is not reached.
		want, why := acceptance.Passed, "1 GPU on the host"
		if n.Host == "lab-3" {
			want, why = acceptance.Failed, "not reached"
		}
		if n.DCGM.Status != want || n.NCCL.Status != acceptance.NotRun || !strings.Contains(strings.Join(n.NCCL.Detail, ""), why) {
			t.Errorf("%s: %+v", n.Host, n)
		}
	}
	if r.counts.Changed != 0 {
		t.Errorf("verify changed a host: %+v", r.counts)
	}
}
