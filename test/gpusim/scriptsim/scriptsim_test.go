package scriptsim_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/gpukit/gpukit/pkg/engine/enginetest"
	"github.com/gpukit/gpukit/pkg/facts"
	"github.com/gpukit/gpukit/pkg/nvidia"
	"github.com/gpukit/gpukit/pkg/osfamily"
	"github.com/gpukit/gpukit/pkg/scripts"
	"github.com/gpukit/gpukit/pkg/ssh"
	"github.com/gpukit/gpukit/test/fixtures"
	"github.com/gpukit/gpukit/test/gpusim/capture"
	"github.com/gpukit/gpukit/test/gpusim/scriptsim"
)

// must is a rendered script, or the test's end.
func must(t *testing.T) func(ssh.Command, error) ssh.Command {
	return func(cmd ssh.Command, err error) ssh.Command {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return cmd
	}
}

// run answers a rendered script on the fleet's host name.
func run(t *testing.T, sim *scriptsim.Sim, name string, cmd ssh.Command) (ssh.Result, error) {
	t.Helper()
	return sim.Handle(context.Background(), enginetest.NewExecutor(name, nil), cmd)
}

// read is what parse reads of cmd's output on host name.
func read[T any](t *testing.T, sim *scriptsim.Sim, name string, cmd ssh.Command, parse func([]byte) (T, error)) T {
	t.Helper()
	res, err := run(t, sim, name, cmd)
	if err != nil {
		t.Fatal(err)
	}
	v, err := parse(res.Stdout)
	if err != nil {
		t.Fatalf("%s: %v\n%s", cmd.Name, err, res.Stdout)
	}
	return v
}

func probe(t *testing.T, sim *scriptsim.Sim, name string) *facts.Facts {
	return read(t, sim, name, must(t)(scripts.Probe(scripts.ProbeParams{GPUFields: facts.GPUQueryFields()})), facts.Parse)
}

func state(t *testing.T, sim *scriptsim.Sim, name string) *nvidia.State {
	return read(t, sim, name, must(t)(scripts.NVIDIAState(scripts.NVIDIAStateParams{GPUFields: facts.GPUQueryFields()})), nvidia.ParseState)
}

// The facts and the NVIDIA state parse as gpukit reads them; the GPUs
// are the capture's, copied with their own index, bus id and UUID.
func TestHostsAsGPUkitReadsThem(t *testing.T) {
	sim, err := scriptsim.New("", map[string]scriptsim.Host{
		"fresh": scriptsim.Fresh(1), "up": scriptsim.Installed("580.95.05", 2), "cpu": scriptsim.CPU(),
	})
	if err != nil {
		t.Fatal(err)
	}
	f := probe(t, sim, "fresh")
	if len(f.PCIGPUs) != 1 || f.PCIGPUs[0] != (facts.PCIDevice{Address: "0000:00:09.0", DeviceID: "0x2330"}) || f.NvidiaSMI || !f.NouveauLoaded {
		t.Errorf("a fresh host: %+v", f)
	}
	f = probe(t, sim, "up")
	if len(f.GPUs) != 2 || f.GPUs[0].Name != "NVIDIA H100 80GB HBM3" || f.GPUs[0].Driver != "580.95.05" || f.GPUs[1].Index != 1 ||
		f.GPUs[0].UUID == f.GPUs[1].UUID || f.GPUs[1].Persistence != "Enabled" || f.PCIGPUs[1].Address != "0000:01:09.0" || f.LoadedDriver != "580.95.05" {
		t.Errorf("an installed host: %+v", f)
	}
	if f := probe(t, sim, "cpu"); len(f.PCIGPUs)+len(f.GPUs) != 0 || f.Hostname != "cpu" {
		t.Errorf("a CPU host: %+v", f)
	}
	s := state(t, sim, "up")
	if s.InstalledDriver() != "580.95.05" || s.ModuleLoaded != "580.95.05" || len(s.SMI) != 2 || s.NeedsReboot() != "" ||
		!s.Packages["nvidia-open"].Held || s.Services["nvidia-persistenced"].Active != "active" {
		t.Errorf("an installed host's state: %+v", s)
	}
}

// The driver's install reads the rendered script, follows with what was
// held at the old release and asks for a reboot; the reboot refuses dials,
// then loads the new module. Until then nvidia-smi reports the mismatch.
func TestDriverUpgradeAndReboot(t *testing.T) {
	sim, err := scriptsim.New("", map[string]scriptsim.Host{"gpu": scriptsim.Installed("580.95.05", 1)})
	if err != nil {
		t.Fatal(err)
	}
	deb, err := osfamily.Detect("debian", "12")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := run(t, sim, "gpu", must(t)(scripts.NVIDIADriver(scripts.NVIDIADriverParams{Family: deb, Version: "590.48.01", Packages: []string{"nvidia-open"}}))); err != nil {
		t.Fatal(err)
	}
	s := state(t, sim, "gpu")
	if s.Packages["nvidia-persistenced"].Version != "590.48.01-1" || !strings.Contains(s.NeedsReboot(), "590.48.01 is installed") ||
		!strings.Contains(s.SMIError, "version mismatch") {
		t.Errorf("after the install: %+v", s)
	}
	if _, err := run(t, sim, "gpu", must(t)(scripts.Reboot())); err != nil {
		t.Fatal(err)
	}
	if err := sim.Dial(context.Background(), "gpu"); err == nil {
		t.Error("a rebooting host took a dial")
	}
	if err := sim.Dial(context.Background(), "gpu"); err != nil {
		t.Fatal(err)
	}
	if h := sim.Host("gpu"); h.Boot != 2 || h.Loaded != "590.48.01" || !slices.Equal(h.Writes, []string{"install the driver", "reboot"}) {
		t.Errorf("after the reboot: %+v", h)
	}
	if s := state(t, sim, "gpu"); s.NeedsReboot() != "" || len(s.SMI) != 1 || s.SMI[0].Driver != "590.48.01" {
		t.Errorf("after the reboot: %+v", s)
	}
}

// nvidia-smi -q replays the capture; the ECC errors are the first GPU's.
func TestHealthReport(t *testing.T) {
	h := scriptsim.Installed("580.95.05", 2)
	h.ECCErrors = 3
	sim, err := scriptsim.New("", map[string]scriptsim.Host{"gpu": h})
	if err != nil {
		t.Fatal(err)
	}
	health := read(t, sim, "gpu", must(t)(scripts.NVIDIAHealth()), facts.ParseSMIQuery).Health()
	if len(health) != 2 || len(health[0].Fails) != 1 || !strings.Contains(health[0].Fails[0], "3 uncorrectable") || len(health[1].Fails) != 0 ||
		health[0].BusID == health[1].BusID {
		t.Errorf("health: %+v", health)
	}
}

// Every capture with --query-gpu and -q recordings can be a host's GPUs.
func TestEveryCapture(t *testing.T) {
	all, err := capture.All(fixtures.Dir(t, "nvidia-smi"))
	if err != nil || len(all) == 0 {
		t.Fatal(all, err)
	}
	for _, c := range all {
		h := scriptsim.Installed("580.95.05", 3)
		h.Capture = c.Prefix
		sim, err := scriptsim.New("", map[string]scriptsim.Host{"gpu": h})
		if err != nil {
			t.Fatal(err)
		}
		if f := probe(t, sim, "gpu"); len(f.GPUs) != 3 || f.GPUs[2].Driver != "580.95.05" || len(f.PCIGPUs) != 3 {
			t.Errorf("%s: %+v", c.Prefix, f)
		}
		res, err := run(t, sim, "gpu", must(t)(scripts.NVIDIAHealth()))
		if err != nil {
			t.Errorf("%s: %v", c.Prefix, err)
			continue
		}
		if q, err := facts.ParseSMIQuery(res.Stdout); err != nil || len(q.Health()) != 3 {
			t.Errorf("%s: -q %v", c.Prefix, err)
		}
	}
}

// Processes computing on the GPUs stop the GPU consumers' step unless it
// is forced; then persistence mode goes off with its daemon.
func TestComputeAppsBlockTheConsumersStop(t *testing.T) {
	h := scriptsim.Installed("580.95.05", 1)
	h.ComputeApps = "4242, python, 1024 MiB"
	sim, err := scriptsim.New("", map[string]scriptsim.Host{"gpu": h})
	if err != nil {
		t.Fatal(err)
	}
	stop := func(force bool) error {
		_, err := run(t, sim, "gpu", must(t)(scripts.GPUConsumersStop(scripts.GPUConsumersStopParams{Units: scripts.GPUConsumerUnits, Force: force})))
		return err
	}
	if err := stop(false); err == nil || !strings.Contains(err.Error(), "4242, python") || !sim.Host("gpu").PersistencedActive {
		t.Errorf("with a process on the GPUs: %v", err)
	}
	if err := stop(true); err != nil || sim.Host("gpu").PersistencedActive {
		t.Errorf("forced: %v", err)
	}
	if s := state(t, sim, "gpu"); s.SMI[0].Persistence != "Disabled" {
		t.Errorf("persistence mode with its daemon stopped: %+v", s.SMI)
	}
}
