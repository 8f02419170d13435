package gpusim

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestQueryGPUSelectsRecordedColumns(t *testing.T) {
	caps, err := Captures(FixturesDir(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(caps) < 4 {
		t.Fatalf("found %d captures (--query-gpu recordings or reports), want at least 4", len(caps))
	}
	fields := []string{"index", "uuid", "name", "memory.total", "driver_version", "mig.mode.current"}
	for _, c := range caps {
		t.Run(filepath.Base(c.Prefix), func(t *testing.T) {
			out, err := c.QueryGPU(fields, "csv,noheader,nounits")
			if err != nil {
				t.Fatal(err)
			}
			row := strings.Split(strings.TrimSpace(out), ", ")
			if len(row) != len(fields) {
				t.Fatalf("row %q has %d fields, want %d", out, len(row), len(fields))
			}
			if row[4] != c.Driver() {
				t.Errorf("driver_version %q, want %q from the capture's name", row[4], c.Driver())
			}
			// older drivers name data-center GPUs "Tesla T4"
			if !strings.HasPrefix(row[2], "NVIDIA") && !strings.HasPrefix(row[2], "Tesla ") {
				t.Errorf("name %q does not look like an NVIDIA GPU name", row[2])
			}
			if strings.Contains(row[3], "MiB") {
				t.Errorf("nounits left the unit in memory.total %q", row[3])
			}
			withUnits, err := c.QueryGPU([]string{"memory.total"}, "csv")
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(withUnits, "memory.total [MiB]\n") || !strings.Contains(withUnits, " MiB") {
				t.Errorf("csv with header and units = %q", withUnits)
			}
		})
	}
}

func TestQueryGPUUnknownField(t *testing.T) {
	caps, err := Captures(FixturesDir(t))
	if err != nil || len(caps) == 0 {
		t.Fatalf("captures: %v (%d)", err, len(caps))
	}
	if _, err := caps[0].QueryGPU([]string{"no.such.field"}, "csv"); err == nil ||
		!strings.Contains(err.Error(), "is not a valid field to query") {
		t.Fatalf("err = %v, want nvidia-smi's unknown-field message", err)
	}
}
