package scriptsim_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gpukit/gpukit/pkg/compat"
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

// Every capture - --query-gpu and -q recordings, or a report alone - can
// be a host's GPUs.
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

// A -q -x report alone stands up a host: the probe, the NVIDIA state and
// the health report give the GPUs the report names, with the report's
// driver on a host that runs it.
func TestXMLReportAloneStandsUpAHost(t *testing.T) {
	dir := fixtures.Dir(t, "nvidia-smi")
	for _, name := range []string{"tesla-t4__drv515.105.01", "rtx-3090__drv525.147.05", "a100-sxm4-80gb-mig__drv535.54.03"} {
		t.Run(name, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join(dir, name+"__q-x.xml"))
			if err != nil {
				t.Fatal(err)
			}
			report, err := facts.ParseSMIQueryXML(b)
			if err != nil {
				t.Fatal(err)
			}
			// the GPUs the report has sections for (the A100's was cut down
			// to one of its four attached GPUs)
			h := scriptsim.Installed(report.DriverVersion, len(report.GPUs))
			h.Capture = filepath.Join(dir, name)
			sim, err := scriptsim.New("", map[string]scriptsim.Host{"gpu": h})
			if err != nil {
				t.Fatal(err)
			}
			f := probe(t, sim, "gpu")
			s := state(t, sim, "gpu")
			if len(f.GPUs) != len(report.GPUs) || len(s.SMI) != len(report.GPUs) || len(f.PCIGPUs) != len(report.GPUs) || f.NvidiaSMIError != "" {
				t.Fatalf("probe %+v, state %+v", f, s)
			}
			for i, want := range report.GPUs {
				for _, g := range []facts.GPU{f.GPUs[i], s.SMI[i]} {
					if g.Index != i || g.Name != want.ProductName || g.UUID != want.UUID || g.MemMiB != *want.MemoryTotalMiB ||
						g.BusID != want.BusID || g.Driver != report.DriverVersion || g.MIGMode != want.MIGMode.Current && want.MIGMode.Current != "N/A" {
						t.Errorf("GPU %d: %+v, the report says %+v", i, g, want)
					}
				}
				id, ok := compat.ParseDeviceID(want.DeviceID)
				if !ok {
					id = 0 // the report hides it
				}
				if p := f.PCIGPUs[i]; !facts.SamePCIAddress(want.BusID, p.Address) || p.DeviceID != fmt.Sprintf("0x%04x", id) {
					t.Errorf("PCI %+v, the report says %s %s", p, want.BusID, want.DeviceID)
				}
			}
			health := read(t, sim, "gpu", must(t)(scripts.NVIDIAHealth()), facts.ParseSMIQuery)
			if health.DriverVersion != report.DriverVersion || len(health.GPUs) != len(report.GPUs) || health.GPUs[0].UUID != report.GPUs[0].UUID {
				t.Errorf("health report %+v", health)
			}
		})
	}
}

// variant writes a hand-made variant of a real report - the T4's, with
// another product name and PCI device id, nothing else changed - for a
// generation no capture was recorded on; its capture prefix.
func variant(t *testing.T, product, deviceID string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fixtures.Dir(t, "nvidia-smi"), "tesla-t4__drv515.105.01__q-x.xml"))
	if err != nil {
		t.Fatal(err)
	}
	x := strings.NewReplacer("<product_name>Tesla T4</product_name>", "<product_name>"+product+"</product_name>",
		"<pci_device_id>1EB810DE</pci_device_id>", "<pci_device_id>"+deviceID+"</pci_device_id>").Replace(string(b))
	prefix := filepath.Join(t.TempDir(), "variant__drv515.105.01")
	if err := os.WriteFile(prefix+"__q-x.xml", []byte(x), 0o644); err != nil {
		t.Fatal(err)
	}
	return prefix
}

// A GPU whose generation the driver's branch dropped: the module ignores it
// and, with no other GPU, does not load (as the real one: "No NVIDIA GPU
// found.", -ENODEV), so nvidia-smi cannot talk to a driver; the PCI bus
// still shows the GPU, which the facts name as unlisted. The branch before
// still drives it.
func TestDroppedGeneration(t *testing.T) {
	kepler := variant(t, "Tesla K80", "102D10DE")
	volta := variant(t, "Tesla V100-SXM2-16GB", "1DB110DE")
	for _, tc := range []struct {
		name, capture, driver, device string
		listed                        bool
		legacy                        string // the branch the kernel log names
	}{
		{"Kepler on 590", kepler, "590.48.01", "0x102d", false, "470"},
		{"Kepler on 580", kepler, "580.95.05", "0x102d", false, "470"},
		{"Volta on 590", volta, "590.48.01", "0x1db1", false, "580"},
		{"Volta on 580", volta, "580.95.05", "0x1db1", true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := scriptsim.Installed(tc.driver, 1)
			h.Capture = tc.capture
			sim, err := scriptsim.New("", map[string]scriptsim.Host{"gpu": h})
			if err != nil {
				t.Fatal(err)
			}
			f := probe(t, sim, "gpu")
			if len(f.PCIGPUs) != 1 || f.PCIGPUs[0].DeviceID != tc.device {
				t.Fatalf("PCI bus %+v", f.PCIGPUs)
			}
			log, err := sim.Host("gpu").KernelLog()
			if err != nil {
				t.Fatal(err)
			}
			if tc.listed {
				if len(f.GPUs) != 1 || f.GPUs[0].Name != "Tesla V100-SXM2-16GB" || f.LoadedDriver != tc.driver || len(f.Unlisted()) != 0 || log != "" {
					t.Errorf("facts %+v, kernel log %q", f, log)
				}
				return
			}
			if len(f.GPUs) != 0 || f.LoadedDriver != "" || !strings.Contains(f.NvidiaSMIError, "couldn't communicate with the NVIDIA driver") ||
				!slices.Equal(f.Unlisted(), f.PCIGPUs) {
				t.Errorf("facts %+v", f)
			}
			if !strings.Contains(log, "supported through the NVIDIA "+tc.legacy+".xx Legacy drivers") || !strings.HasSuffix(log, "NVRM: No NVIDIA GPU found.\n") {
				t.Errorf("kernel log:\n%s", log)
			}
			res, err := run(t, sim, "gpu", must(t)(scripts.NVIDIAHealth()))
			if err == nil || res.ExitCode != 9 {
				t.Errorf("nvidia-smi -q -x: exit %d, %q", res.ExitCode, res.Stdout)
			}
			if s := state(t, sim, "gpu"); s.ModuleLoaded != "" || len(s.SMI) != 0 || s.SMIError == "" {
				t.Errorf("state %+v", s)
			}
		})
	}
}

// Installing a driver whose branch dropped the host's only GPU: modprobe
// fails, so the install asks for a reboot, after which the module still
// does not load.
func TestDriverInstallOnADroppedGeneration(t *testing.T) {
	sim, err := scriptsim.New("", map[string]scriptsim.Host{"gpu": {GPUs: 1, Boot: 1, Capture: variant(t, "Tesla K80", "102D10DE"),
		Headers: true, NouveauBlacklisted: true}})
	if err != nil {
		t.Fatal(err)
	}
	deb, err := osfamily.Detect("debian", "12")
	if err != nil {
		t.Fatal(err)
	}
	res, err := run(t, sim, "gpu", must(t)(scripts.NVIDIADriver(scripts.NVIDIADriverParams{Family: deb, Version: "590.48.01", Packages: []string{"nvidia-open"}})))
	if err != nil || !strings.Contains(string(res.Stdout), "driver none loaded, 590.48.01 installed: the host reboots") {
		t.Fatalf("install: %v\n%s", err, res.Stdout)
	}
	if _, err := run(t, sim, "gpu", must(t)(scripts.Reboot())); err != nil {
		t.Fatal(err)
	}
	for sim.Dial(context.Background(), "gpu") != nil {
	}
	if h := sim.Host("gpu"); h.Boot != 2 || h.Loaded != "" {
		t.Errorf("after the reboot: %+v", h)
	}
}

// A module already in memory when its GPU is swapped for one its branch
// dropped (a host's state changed by a test) has no device to list: "No
// devices were found", exit 6, as a real module that loads without a GPU
// (one that found NVSwitches) answers.
func TestModuleInMemoryWithoutAGPUItDrives(t *testing.T) {
	sim, err := scriptsim.New("", map[string]scriptsim.Host{"gpu": scriptsim.Installed("590.48.01", 1)})
	if err != nil {
		t.Fatal(err)
	}
	if err := sim.Update("gpu", func(h *scriptsim.Host) { h.Device = "0x102d" }); err != nil {
		t.Fatal(err)
	}
	res, err := run(t, sim, "gpu", must(t)(scripts.NVIDIAHealth()))
	if err == nil || res.ExitCode != 6 || string(res.Stdout) != "No devices were found\n" {
		t.Errorf("exit %d, %q", res.ExitCode, res.Stdout)
	}
	if f := probe(t, sim, "gpu"); len(f.GPUs) != 0 || f.NvidiaSMIError != "No devices were found" || len(f.Unlisted()) != 1 {
		t.Errorf("facts %+v", f)
	}
}
