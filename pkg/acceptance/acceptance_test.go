package acceptance_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpukit/gpukit/pkg/acceptance"
	"github.com/gpukit/gpukit/test/fixtures"
)

func capture(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fixtures.Dir(t, dir), name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Real dcgmi diag tables: a passing run of DCGM 3.3 (with metadata), a
// failing one and a cut-off one of DCGM 2.x.
func TestParseDCGMDiag(t *testing.T) {
	for _, tc := range []struct {
		file    string
		tests   int
		status  acceptance.Status
		why     string
		version string
	}{
		{"a100-sxm4-80gb-x8__dcgm3.3.3__diag-r2-pass.txt", 11, acceptance.Passed, "", "3.3.3"},
		{"deepops-prolog__diag-r1-fail.txt", 9, acceptance.Failed, "Deployment/Persistence Mode: Fail", ""},
		{"deepops-prolog__diag-r1-pass-truncated.txt", 9, acceptance.NotRun, "ends before its table does", ""},
	} {
		t.Run(tc.file, func(t *testing.T) {
			d, err := acceptance.ParseDCGMDiag(capture(t, "dcgm-diag", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			if len(d.Tests) != tc.tests || d.Version != tc.version {
				t.Errorf("%d tests, version %q: %+v", len(d.Tests), d.Version, d)
			}
			st, why := d.Verdict()
			if st != tc.status || tc.why != "" && !strings.Contains(strings.Join(why, "; "), tc.why) {
				t.Errorf("verdict %s %v, want %s %q", st, why, tc.status, tc.why)
			}
		})
	}
	d, _ := acceptance.ParseDCGMDiag(capture(t, "dcgm-diag", "a100-sxm4-80gb-x8__dcgm3.3.3__diag-r2-pass.txt"))
	if d.Driver != "535.104.12" || len(d.Devices) != 8 || d.Tests[9] != (acceptance.DiagTest{Category: "Integration", Name: "PCIe", Result: "Pass - All"}) {
		t.Errorf("%+v", d)
	}
	if _, err := acceptance.ParseDCGMDiag("Error: unable to establish a connection to the specified host: localhost\n"); err == nil {
		t.Error("no table, no error")
	}
}

// Real nccl-tests logs: a 2x8 H100 run, an MPIJob launcher's log (noise),
// OpenMPI-tagged and srun-prefixed lines, the older columns.
func TestParseNCCL(t *testing.T) {
	for _, tc := range []struct {
		file  string
		rows  int
		ranks int
		hosts int
		peak  float64
		avg   float64
		gpu   string
	}{
		{"h100-80gb-hbm3-2x8__all-reduce.txt", 5, 16, 2, 471.22, 464.075, "NVIDIA H100 80GB HBM3"},
		{"h200-2x1__all-reduce-mpijob.txt", 24, 2, 2, 0, 15.5188, "NVIDIA H200"},
		{"h100-p5__all-reduce-mpirun-tagged.txt", 0, 0, 0, 0, 156.742, ""},
		{"a100-80gb-p4de-2x8__all-reduce-srun.txt", 0, 0, 0, 0, 0, ""},
		{"dgx-a100-4x8__all-reduce-old-format.txt", 0, 0, 0, 0, 113.289, ""},
	} {
		t.Run(tc.file, func(t *testing.T) {
			r, err := acceptance.ParseNCCL(capture(t, "nccl-tests", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			if tc.rows > 0 && len(r.Rows) != tc.rows || len(r.Ranks) != tc.ranks || len(r.Hosts()) != tc.hosts || r.AvgBusBW != tc.avg {
				t.Errorf("%d rows, %d ranks on %v, avg %v: want %d rows, %d ranks on %d hosts, avg %v", len(r.Rows), len(r.Ranks), r.Hosts(), r.AvgBusBW, tc.rows, tc.ranks, tc.hosts, tc.avg)
			}
			if tc.peak > 0 && r.PeakBusBW() != tc.peak {
				t.Errorf("peak %v, want %v", r.PeakBusBW(), tc.peak)
			}
			if tc.gpu != "" && r.Ranks[0].GPU != tc.gpu {
				t.Errorf("rank 0 on %q", r.Ranks[0].GPU)
			}
			if st, why := r.Verdict(0); st != acceptance.Passed {
				t.Errorf("verdict %s: %s", st, why)
			}
			t.Logf("%d sizes, peak %.1f GB/s at the largest", len(r.Rows), r.PeakBusBW())
		})
	}
	r, _ := acceptance.ParseNCCL(capture(t, "nccl-tests", "h100-80gb-hbm3-2x8__all-reduce.txt"))
	if st, why := r.Verdict(480); st != acceptance.Failed || !strings.Contains(why, "471.2 GB/s at 16 GiB, below the 480") {
		t.Errorf("against 480 GB/s: %s %s", st, why)
	}
	if _, err := acceptance.ParseNCCL("bash: all_reduce_perf: command not found\n"); err == nil {
		t.Error("no rows, no error")
	}
}
