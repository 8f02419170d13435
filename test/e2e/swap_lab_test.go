package e2e

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpukit/gpukit/internal/cli"
	"github.com/gpukit/gpukit/pkg/event"
	"github.com/gpukit/gpukit/pkg/nvidia"
	"github.com/gpukit/gpukit/test/gpusim"
	"github.com/gpukit/gpukit/test/lab"
)

// swapStep is the reboot phase's write that swaps the modules.
func swapStep(driver string) string {
	return "swap the kernel modules for driver " + driver
}

// A new driver gets into memory without a reboot where nothing holds the
// old one, on two lab hosts with simulated H100s whose kernel modules
// modprobe loads and unloads (test/gpusim RuntimeModules: the real modprobe
// runs the simulation's install and remove commands, which refuse while a
// module, a process or a daemon holds nvidia, as the kernel does; real
// systemd, real reboots). A fresh install loads its module at once. A
// driver change swaps lab-1's modules in its boot: the persistence daemon
// runs again and the MIG layout, which a module load loses, is back from
// gpukit-mig.service. lab-2 has a process computing outside any
// orchestrator: the swap says so and the host reboots instead. A second run
// changes nothing, and rebootPolicy: always reboots without trying.
func TestLabDriverSwap(t *testing.T) {
	lab.Require(t)
	t.Parallel()
	h100 := labCapture(t, "h100-80gb-hbm3__drv590.48.01")
	l, hosts, raw := gpuLab(t, map[string]gpusim.Hardware{
		"lab-1": {Capture: h100, RuntimeModules: true}, "lab-2": {Capture: h100, RuntimeModules: true}})
	inv := withNVIDIA(t, raw, "swap.yaml", "{}", map[string]string{"lab-1": "all-balanced"})
	initWith := func(t *testing.T, inv, driver string) initResult {
		t.Helper()
		return runInit(t, "init", "-i", inv, "--driver", driver, "--skip-phases", "kubernetes,platform,kubeflow")
	}
	loaded := func(t *testing.T, h string) string {
		t.Helper()
		return l.SSH(t, h, "cat /sys/module/nvidia/version; nvidia-smi --query-gpu=driver_version,persistence_mode --format=csv,noheader")
	}
	// took is how long each host spent in nvidia/reboot.
	took := func(r initResult) map[string]time.Duration {
		start, out := map[string]time.Time{}, map[string]time.Duration{}
		for _, e := range r.events {
			if e.Phase != nvidia.PhaseReboot {
				continue
			}
			switch e.Type {
			case event.StepStart:
				if start[e.Host].IsZero() {
					start[e.Host] = e.Time
				}
			case event.HostDone:
				out[e.Host] = e.Time.Sub(start[e.Host]).Round(10 * time.Millisecond)
			}
		}
		return out
	}

	t.Run("a fresh install loads its module without a reboot", func(t *testing.T) {
		boots := bootIDs(t, l, hosts...)
		r := initWith(t, inv, "580.95.05")
		if r.code != cli.ExitOK || r.counts != (event.HostCounts{Changed: 2}) {
			t.Fatalf("exit %d %+v %v\n%s", r.code, r.counts, r.failed, r.out)
		}
		for _, h := range hosts {
			if got := l.BootID(t, h); got != boots[h] {
				t.Errorf("%s rebooted", h)
			}
			if got := loaded(t, h); got != "580.95.05\n580.95.05, Enabled" {
				t.Errorf("%s: %q", h, got)
			}
		}
		if got := migDevices(t, l, "lab-1"); got != "1g.10gb,1g.10gb,2g.20gb,3g.40gb" {
			t.Errorf("lab-1's MIG devices: %q", got)
		}
	})

	t.Run("a driver change swaps the modules where nothing holds them", func(t *testing.T) {
		l.SSH(t, "lab-2", "echo '4242, python, 1024 MiB' >/etc/gpusim/compute-apps")
		boots := bootIDs(t, l, hosts...)
		r := initWith(t, inv, "590.48.01")
		if r.code != cli.ExitOK || r.counts != (event.HostCounts{Changed: 2}) {
			t.Fatalf("exit %d %+v %v\n%s", r.code, r.counts, r.failed, r.out)
		}
		t.Logf("nvidia/reboot per host: %v", took(r))
		w := r.writeSteps()
		if !slices.Contains(w["lab-1"], swapStep("590.48.01")) || slices.Contains(w["lab-1"], "reboot") {
			t.Errorf("lab-1's writes: %v", w["lab-1"])
		}
		if !slices.Contains(w["lab-2"], swapStep("590.48.01")) || !slices.Contains(w["lab-2"], "reboot") {
			t.Errorf("lab-2's writes: %v", w["lab-2"])
		}
		// nvidia-smi does not answer between the new packages and the new
		// module (version mismatch): the kernel's refusal names the holder.
		if !strings.Contains(r.out, "gpukit: not swapped: modprobe -r nvidia: modprobe: FATAL: Module nvidia is in use.") || !strings.Contains(r.out, "4242, python") {
			t.Errorf("the refusal is not said:\n%s", r.out)
		}
		if l.BootID(t, "lab-1") != boots["lab-1"] || l.BootID(t, "lab-2") == boots["lab-2"] {
			t.Errorf("boots: lab-1 kept its boot %v, lab-2 rebooted %v", l.BootID(t, "lab-1") == boots["lab-1"], l.BootID(t, "lab-2") != boots["lab-2"])
		}
		for _, h := range hosts {
			if got := loaded(t, h); got != "590.48.01\n590.48.01, Enabled" {
				t.Errorf("%s: %q", h, got)
			}
		}
		if got := l.SSH(t, "lab-1", "systemctl is-active nvidia-persistenced; ls /run/gpukit/reboot-required 2>/dev/null || echo no marker"); got != "active\nno marker" {
			t.Errorf("lab-1 after the swap: %q", got)
		}
		if got := migDevices(t, l, "lab-1"); got != "1g.10gb,1g.10gb,2g.20gb,3g.40gb" {
			t.Errorf("lab-1's MIG devices after the swap: %q\n%s", got, l.SSH(t, "lab-1", "journalctl -u gpukit-mig --no-pager | tail -20"))
		}
		l.SSH(t, "lab-2", "rm /etc/gpusim/compute-apps")
	})

	t.Run("second run changes nothing", func(t *testing.T) {
		if r := initWith(t, inv, "590.48.01"); r.code != cli.ExitOK || r.counts != (event.HostCounts{Unchanged: 2}) {
			t.Errorf("exit %d %+v, writes %v", r.code, r.counts, r.writeSteps())
		}
	})

	t.Run("rebootPolicy always reboots without trying", func(t *testing.T) {
		always := withNVIDIA(t, raw, "always.yaml", "{rebootPolicy: always}", map[string]string{"lab-1": "all-balanced"})
		boots := bootIDs(t, l, hosts...)
		r := initWith(t, always, "580.95.05")
		if r.code != cli.ExitOK || r.counts != (event.HostCounts{Changed: 2}) {
			t.Fatalf("exit %d %+v %v\n%s", r.code, r.counts, r.failed, r.out)
		}
		t.Logf("nvidia/reboot per host: %v", took(r))
		for _, h := range hosts {
			if w := r.writeSteps()[h]; slices.Contains(w, swapStep("580.95.05")) || !slices.Contains(w, "reboot") {
				t.Errorf("%s's writes: %v", h, w)
			}
			if l.BootID(t, h) == boots[h] {
				t.Errorf("%s did not reboot", h)
			}
			if got := loaded(t, h); got != "580.95.05\n580.95.05, Enabled" {
				t.Errorf("%s: %q", h, got)
			}
		}
	})
}
