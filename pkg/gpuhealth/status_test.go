package gpuhealth_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpukit/gpukit/pkg/dcgm"
	"github.com/gpukit/gpukit/pkg/facts"
	"github.com/gpukit/gpukit/pkg/gpuhealth"
	"github.com/gpukit/gpukit/test/fixtures"
)

func TestParseXIDs(t *testing.T) {
	t.Parallel()
	out := "[ 12.3] NVRM: Xid (PCI:0000:17:00): 79, pid=1234, name=python, GPU has fallen off the bus.\n" +
		"NVRM: Xid (PCI:0000:b1:00): 13, Graphics SM Warp Exception on (GPC 0, TPC 1)\nnot an xid\n"
	xs := gpuhealth.ParseXIDs([]byte(out))
	if len(xs) != 2 || xs[0].Bus != "0000:17:00" || xs[0].Code != 79 || !strings.Contains(xs[0].Message, "fallen off the bus") || xs[1].Code != 13 {
		t.Errorf("%+v", xs)
	}
}

// gpukit status over real nvidia-smi captures (text and XML): each GPU's
// report and verdict, the kernel's XIDs put on the GPU they name, a
// critical one failing it, an application's only warning.
func TestParseGPUStatusOfRealCaptures(t *testing.T) {
	t.Parallel()
	dir := fixtures.Dir(t, "nvidia-smi")
	for _, file := range []string{"h100-80gb-hbm3__drv590.48.01__q-idle.txt", "l40s__drv595.80__q-idle.txt", "a100-sxm4-80gb-mig__drv535.54.03__q-x.xml"} {
		t.Run(file, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join(dir, file))
			if err != nil {
				t.Fatal(err)
			}
			clean := gpuhealth.ParseGPUStatus("h", append(append([]byte("=== nvidia-smi\n"), b...), "\n=== xid\n"...))
			if clean.Error != "" || len(clean.GPUs) == 0 || clean.Driver == "" {
				t.Fatalf("%+v", clean)
			}
			g := clean.GPUs[0]
			if g.TemperatureC == nil || g.ProductName == "" || g.Health.BusID != g.BusID {
				t.Errorf("GPU 0: %+v", g)
			}
			if clean.Status == facts.HealthFail {
				t.Errorf("an idle capture fails: %+v", g.Health)
			}
			bus := g.BusID
			xidBus := strings.TrimPrefix(strings.ToLower(bus), "0000")
			xidBus = xidBus[:strings.LastIndexByte(xidBus, '.')]
			out := append(append([]byte("=== nvidia-smi\n"), b...), []byte("\n=== xid\nNVRM: Xid (PCI:"+xidBus+"): 79, pid=1, GPU has fallen off the bus.\nNVRM: Xid (PCI:"+xidBus+"): 13, Graphics Exception\nNVRM: Xid (PCI:0000:ee:00): 31, MMU fault\n")...)
			r := gpuhealth.ParseGPUStatus("h", out)
			if r.Status != facts.HealthFail || len(r.GPUs[0].XIDs) != 2 || !strings.Contains(strings.Join(r.GPUs[0].Health.Fails, ";"), "XID 79 this boot") {
				t.Errorf("with XID 79 on %s: %s, GPU 0 xids %v, fails %v", xidBus, r.Status, r.GPUs[0].XIDs, r.GPUs[0].Health.Fails)
			}
			if len(r.XIDs) != 1 || r.XIDs[0].Bus != "0000:ee:00" {
				t.Errorf("XIDs of no GPU of the report: %+v", r.XIDs)
			}
		})
	}
}

func TestParseGPUStatusWithoutAnAnswer(t *testing.T) {
	t.Parallel()
	r := gpuhealth.ParseGPUStatus("h", []byte("=== nvidia-smi\nNVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running.\n\n=== xid\n"))
	if r.Status != facts.HealthFail || !strings.HasPrefix(r.Error, "NVIDIA-SMI has failed") {
		t.Errorf("%+v", r)
	}
	if r := gpuhealth.ParseGPUStatus("h", []byte("gpukit: no nvidia-smi\n")); r.Error != "no nvidia-smi" || r.Status != "" {
		t.Errorf("no nvidia-smi: %+v", r)
	}
}

// dcgm-exporter's readings join nvidia-smi's by UUID: a real H100 capture
// and a real H100 scrape, one reading given the capture's UUID; a critical
// XID the exporter saw fails that GPU, a reading of a GPU nvidia-smi did
// not list stays the host's.
func TestAddDCGM(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join(fixtures.Dir(t, "nvidia-smi"), "h100-80gb-hbm3__drv590.48.01__q-idle.txt"))
	if err != nil {
		t.Fatal(err)
	}
	r := gpuhealth.ParseGPUStatus("h", append(append([]byte("=== nvidia-smi\n"), b...), "\n=== xid\n"...))
	scrape, err := os.Open(filepath.Join(fixtures.Dir(t, "dcgm"), "h100-80gb-hbm3-x8__k8s-pod-labels__sampled.prom"))
	if err != nil {
		t.Fatal(err)
	}
	defer scrape.Close()
	readings, err := dcgm.Parse(scrape)
	if err != nil || len(readings) != 8 || len(r.GPUs) == 0 {
		t.Fatalf("%d readings %v, %d GPUs", len(readings), err, len(r.GPUs))
	}
	mine := readings[0]
	mine.UUID = strings.ToLower(r.GPUs[0].UUID) // exporters and nvidia-smi need not agree on case
	r.AddDCGM([]dcgm.GPU{mine, readings[1]})
	g := r.GPUs[0]
	if len(g.DCGM) != 1 || len(g.DCGM[0].Pods) != 1 || len(r.DCGM) != 0 || g.Health.Status() != facts.HealthOK || r.Status != facts.HealthOK {
		t.Errorf("healthy readings: GPU %+v, host's %+v, status %s", g.DCGM, r.DCGM, r.Status)
	}
	// A failing reading of a GPU this host does not have is dropped.
	stranger := readings[2]
	stranger.Fields = map[string]float64{dcgm.FieldXID: 79}
	r.AddDCGM([]dcgm.GPU{stranger})
	if r.Status != facts.HealthOK || len(r.DCGM) != 0 {
		t.Errorf("a stranger's XID 79: %s %+v", r.Status, r.DCGM)
	}
	mine.Fields = map[string]float64{dcgm.FieldXID: 79}
	r.AddDCGM([]dcgm.GPU{mine})
	if g := r.GPUs[0]; r.Status != facts.HealthFail || !strings.Contains(strings.Join(g.Health.Fails, "|"), "last XID 79") {
		t.Errorf("XID 79 from the exporter: %s %v", r.Status, g.Health)
	}
}
