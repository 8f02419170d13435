package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpukit/gpukit/pkg/dcgm"
	"github.com/gpukit/gpukit/test/fixtures"
)

// A real scrape of eight H100s replayed for a node with one GPU: that
// GPU's series only, with the node's UUID and name; every label and value
// else as recorded.
func TestReplay(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(fixtures.Dir(t, "dcgm"), "h100-80gb-hbm3-x8__k8s-pod-labels__sampled.prom"))
	if err != nil {
		t.Fatal(err)
	}
	spec := "lab-2:GPU-5a1e0002-6c2d-4b1e-9f00-000000000002 lab-3:GPU-5a1e0003-6c2d-4b1e-9f00-000000000003"
	if got := UUIDsOf(spec, "lab-3"); len(got) != 1 || got[0] != "GPU-5a1e0003-6c2d-4b1e-9f00-000000000003" || UUIDsOf(spec, "lab-9") != nil || len(UUIDsOf("GPU-a,GPU-b", "x")) != 2 {
		t.Errorf("UUIDsOf: %v", got)
	}
	out := Replay(string(b), UUIDsOf(spec, "lab-2"), "lab-2")
	gpus, err := dcgm.Parse(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	if len(gpus) != 1 || gpus[0].UUID != "GPU-5a1e0002-6c2d-4b1e-9f00-000000000002" || gpus[0].Hostname != "lab-2" || len(gpus[0].Pods) != 1 || gpus[0].Fields[dcgm.FieldTemp] != 30 {
		t.Errorf("%+v", gpus)
	}
	if all, _ := dcgm.Parse(strings.NewReader(Replay(string(b), nil, ""))); len(all) != 8 {
		t.Errorf("no UUIDs given: %d GPUs, want the 8 recorded", len(all))
	}
}
