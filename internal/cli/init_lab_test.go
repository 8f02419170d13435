package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpukit/gpukit/pkg/event"
	"github.com/gpukit/gpukit/test/gpusim"
	"github.com/gpukit/gpukit/test/lab"
)

// initResult is what one `gpukit init -o json` run said: its exit code, its
// events, the last one's host counts, and each host's failure.
type initResult struct {
	code   int
	events []event.Event
	counts event.HostCounts
	failed map[string]string // host -> error
	out    string
}

func runInit(t *testing.T, args ...string) initResult {
	t.Helper()
	var out, errb bytes.Buffer
	start := time.Now()
	args = append(append([]string{}, args...), "-o", "json", "--log-dir", t.TempDir())
	code := Execute(context.Background(), args, Streams{In: strings.NewReader(""), Out: &out, Err: &errb})
	r := initResult{code: code, failed: map[string]string{}, out: out.String() + errb.String()}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var e event.Event
		if err := json.Unmarshal([]byte(line), &e); err != nil || e.Type == "" {
			continue // the preflight report
		}
		r.events = append(r.events, e)
		switch e.Type {
		case event.HostFailed:
			r.failed[e.Host] = e.Phase + ": " + e.Err
		case event.RunDone:
			if e.Hosts == nil {
				t.Fatalf("run_done without host counts: %s", line)
			}
			r.counts = *e.Hosts
		}
	}
	t.Logf("gpukit %s: exit %d in %s, %+v", strings.Join(args[:1], " "), code, time.Since(start).Round(time.Millisecond), r.counts)
	return r
}

// writeSteps are the write steps the run made, by host ("read" steps, the
// wait for a reboot and the probes are left out).
func (r initResult) writeSteps() map[string][]string {
	out := map[string][]string{}
	for _, e := range r.events {
		if e.Type != event.StepStart {
			continue
		}
		switch e.Step {
		case "probe", "read the NVIDIA state", "read the GPUs' health", "wait for the host to come back", "wait for the boot to finish":
			continue
		}
		out[e.Host] = append(out[e.Host], e.Step)
	}
	return out
}

// bootIDs reads every host's boot id.
func bootIDs(t *testing.T, l *lab.Lab, hosts ...string) map[string]string {
	out := map[string]string{}
	for _, h := range hosts {
		out[h] = l.BootID(t, h)
	}
	return out
}

// The NVIDIA layer of `gpukit init` on three lab hosts with simulated GPUs
// (test/gpusim: real apt operations on stand-ins of NVIDIA's packages, PCI
// devices and a module loaded at boot; real reboots): Secure Boot refused
// before anything changes, a dry-run that changes nothing, a fresh install
// that ends verified with one reboot per host, a second run that changes
// nothing, a driver change with one host's install failing (named, the
// others finish, a re-run converges, one reboot per host), and a host that
// never comes back from its reboot, failed within the timeout.
func TestLabInitNVIDIA(t *testing.T) {
	lab.Require(t)
	captures, err := gpusim.Captures(gpusim.FixturesDir(t))
	if err != nil {
		t.Fatal(err)
	}
	pick := func(prefix string) gpusim.Capture {
		for _, c := range captures {
			if strings.Contains(c.Prefix, "/"+prefix+"__") {
				return c
			}
		}
		t.Skipf("no capture %s among the fixtures", prefix)
		return gpusim.Capture{}
	}
	l := lab.Start(t, lab.Options{Hosts: 3})
	hosts := []string{"lab-1", "lab-2", "lab-3"}
	repo := gpusim.Simulate(t, l, map[string]gpusim.Hardware{
		"lab-1": {Capture: pick("h100-80gb-hbm3")},
		"lab-2": {Capture: pick("h100-80gb-hbm3"), NVSwitches: 4}, // an HGX: the fabric manager
		"lab-3": {Capture: pick("l40s"), Nouveau: true},
	})
	inv, err := repo.Inventory(l, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for _, h := range hosts {
		l.SetRebootDelay(t, h, time.Second)
		// The OS's own package sources, as any installed host has (DKMS
		// and build tools come from them).
		wg.Add(1)
		go func() { defer wg.Done(); l.UseDebianMirror(t, h) }()
	}
	wg.Wait()

	t.Run("secure boot refused before anything changes", func(t *testing.T) {
		l.SSH(t, "lab-3", `printf '#!/bin/sh\necho "SecureBoot enabled"\n' >/usr/local/bin/mokutil && chmod +x /usr/local/bin/mokutil`)
		defer l.SSH(t, "lab-3", "rm -f /usr/local/bin/mokutil")
		r := runInit(t, "init", "-i", inv)
		if r.code != ExitHostsFailed || !strings.Contains(r.failed["lab-3"], "preflight/checks") ||
			!strings.Contains(r.failed["lab-3"], "choose spec.nvidia.secureBoot: signed or mok") {
			t.Errorf("exit %d, failed %v", r.code, r.failed)
		}
		if r.counts.Changed != 0 || len(r.writeSteps()) != 0 {
			t.Errorf("changes after a failed preflight: %+v %v", r.counts, r.writeSteps())
		}
		if !strings.Contains(r.out, `"type":"preflight-report"`) {
			t.Error("a run stopped by preflight does not report the checks")
		}
	})

	before := bootIDs(t, l, hosts...)
	t.Run("plan changes nothing", func(t *testing.T) {
		r := runInit(t, "plan", "-i", inv)
		if r.code != ExitOK || r.counts.Changed != 3 {
			t.Fatalf("plan: exit %d %+v %v\n%s", r.code, r.counts, r.failed, r.out)
		}
		planned := map[string]int{}
		for _, e := range r.events {
			if e.Type == event.Planned && strings.HasPrefix(e.Step, "driver 580.95.05") {
				planned[e.Host]++
				if !strings.Contains(e.Script, "nvidia-open") || !strings.Contains(e.Script, "apt-mark hold") {
					t.Errorf("%s: planned driver script lacks the package or the hold:\n%s", e.Host, e.Script)
				}
			}
		}
		if len(planned) != 3 || len(r.writeSteps()) != 0 {
			t.Errorf("planned driver on %v; steps run %v", planned, r.writeSteps())
		}
		if now := bootIDs(t, l, hosts...); now["lab-1"] != before["lab-1"] || l.SSH(t, "lab-1", "dpkg-query -W nvidia-open 2>/dev/null || echo none") != "none" {
			t.Error("plan changed a host")
		}
	})

	t.Run("fresh install ends verified, one reboot each", func(t *testing.T) {
		start := time.Now()
		r := runInit(t, "init", "-i", inv)
		if r.code != ExitOK || r.counts != (event.HostCounts{Changed: 3}) {
			t.Fatalf("exit %d %+v %v\n%s", r.code, r.counts, r.failed, r.out)
		}
		t.Logf("first init on 3 hosts: %s", time.Since(start).Round(100*time.Millisecond))
		after := bootIDs(t, l, hosts...)
		for _, h := range hosts {
			if after[h] == before[h] {
				t.Errorf("%s did not reboot", h)
			}
			if n := strings.Count(strings.Join(r.writeSteps()[h], "|"), "reboot"); n != 1 {
				t.Errorf("%s rebooted %d times: %v", h, n, r.writeSteps()[h])
			}
			if out := l.SSH(t, h, "nvidia-smi --query-gpu=driver_version,persistence_mode --format=csv,noheader"); !strings.HasPrefix(out, "580.95.05, Enabled") {
				t.Errorf("%s nvidia-smi: %q", h, out)
			}
		}
		if out := l.SSH(t, "lab-2", "systemctl is-active nvidia-fabricmanager; dpkg-query -W -f='${Version}' nvidia-fabricmanager"); out != "active\n580.95.05-1" {
			t.Errorf("lab-2 fabric manager: %q", out)
		}
		if out := l.SSH(t, "lab-1", "systemctl is-active nvidia-fabricmanager || true"); strings.HasPrefix(out, "active") {
			t.Error("the fabric manager runs on a host without NVSwitch")
		}
		if out := l.SSH(t, "lab-3", "cat /etc/modprobe.d/blacklist-nouveau.conf; test -d /sys/module/nouveau && echo loaded || echo unloaded"); !strings.Contains(out, "blacklist nouveau") || !strings.HasSuffix(out, "unloaded") {
			t.Errorf("lab-3 nouveau: %q", out)
		}
		if out := l.SSH(t, "lab-1", "apt-mark showhold | grep -c . ; cat /etc/apt/apt.conf.d/51gpukit-nvidia | grep -c nvidia-"); !strings.HasPrefix(out, "1") || strings.HasPrefix(out, "0\n") {
			t.Errorf("lab-1 holds and unattended-upgrades blacklist: %q", out)
		}
	})

	t.Run("second run changes nothing", func(t *testing.T) {
		start := time.Now()
		ids := bootIDs(t, l, hosts...)
		r := runInit(t, "init", "-i", inv)
		if r.code != ExitOK || r.counts != (event.HostCounts{Unchanged: 3}) || len(r.writeSteps()) != 0 {
			t.Errorf("exit %d %+v, writes %v", r.code, r.counts, r.writeSteps())
		}
		t.Logf("second init on 3 hosts: %s", time.Since(start).Round(100*time.Millisecond))
		if now := bootIDs(t, l, hosts...); now["lab-1"] != ids["lab-1"] {
			t.Error("a converged host rebooted")
		}
	})

	t.Run("driver change: a failing host is named, the others finish, a re-run converges", func(t *testing.T) {
		ids := bootIDs(t, l, hosts...)
		l.SSH(t, "lab-2", "touch /etc/gpusim/fail-install")
		r := runInit(t, "init", "-i", inv, "--driver", "590.48.01")
		if r.code != ExitHostsFailed || len(r.failed) != 1 || !strings.Contains(r.failed["lab-2"], "nvidia/driver: driver 590.48.01") ||
			!strings.Contains(r.failed["lab-2"], "dpkg returned an error") {
			t.Errorf("exit %d, failed %v", r.code, r.failed)
		}
		// Its output (in the summary's tail and its log) says which package failed.
		if !strings.Contains(r.out, "post-installation script subprocess returned error exit status 10") {
			t.Error("the failing package's own message is not in the output")
		}
		now := bootIDs(t, l, hosts...)
		for _, h := range []string{"lab-1", "lab-3"} {
			if now[h] == ids[h] || strings.Count(strings.Join(r.writeSteps()[h], "|"), "reboot") != 1 {
				t.Errorf("%s: not rebooted exactly once for the new driver: %v", h, r.writeSteps()[h])
			}
			if out := l.SSH(t, h, "nvidia-smi --query-gpu=driver_version --format=csv,noheader"); out != "590.48.01" {
				t.Errorf("%s runs %q", h, out)
			}
		}
		if now["lab-2"] != ids["lab-2"] {
			t.Error("the failed host rebooted")
		}
		l.SSH(t, "lab-2", "rm /etc/gpusim/fail-install")
		r = runInit(t, "init", "-i", inv, "--driver", "590.48.01")
		if r.code != ExitOK || r.counts != (event.HostCounts{Changed: 1, Unchanged: 2}) {
			t.Errorf("re-run: exit %d %+v %v", r.code, r.counts, r.failed)
		}
		if out := l.SSH(t, "lab-2", "nvidia-smi --query-gpu=driver_version --format=csv,noheader; dpkg-query -W -f='${Version}' nvidia-fabricmanager"); out != "590.48.01\n590.48.01-1" {
			t.Errorf("lab-2 after the re-run: %q", out)
		}
	})

	t.Run("a host that never comes back is failed within the timeout", func(t *testing.T) {
		l.SetRebootDelay(t, "lab-3", lab.RebootNever)
		start := time.Now()
		r := runInit(t, "init", "-i", inv, "--driver", "580.95.05", "--reboot-timeout", "20s")
		took := time.Since(start)
		if r.code != ExitHostsFailed || len(r.failed) != 1 || !strings.Contains(r.failed["lab-3"], "nvidia/reboot") ||
			!strings.Contains(r.failed["lab-3"], "lab-3 did not come back within 20s") {
			t.Errorf("exit %d, failed %v", r.code, r.failed)
		}
		if took > 90*time.Second {
			t.Errorf("the run took %s with a 20s reboot timeout", took)
		}
		l.SetRebootDelay(t, "lab-3", time.Second)
		l.StartHost(t, "lab-3")
		r = runInit(t, "init", "-i", inv, "--driver", "580.95.05")
		if r.code != ExitOK || r.counts.Failed != 0 || r.counts.Changed != 0 {
			// lab-3 came back with the new driver loaded: nothing left to do.
			t.Errorf("after the host came back: exit %d %+v %v", r.code, r.counts, r.failed)
		}
	})
	if t.Failed() {
		if b, err := os.ReadFile(inv); err == nil {
			t.Logf("inventory:\n%s", b)
		}
	}
}
