package nvidia_test

import (
	"context"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/engine/enginetest"
	"github.com/gpukit/gpukit/pkg/event"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/nvidia"
	"github.com/gpukit/gpukit/pkg/preflight"
	"github.com/gpukit/gpukit/test/gpusim/scriptsim"
)

func testInventory(t *testing.T, nvidiaBlock string) *inventory.Inventory {
	t.Helper()
	doc := "apiVersion: gpukit.dev/v1alpha1\nkind: Cluster\nmetadata: {name: t}\nspec:\n  hosts:\n" +
		"  - {name: gpu-001, address: 10.0.0.1, roles: [control-plane, worker]}\n  - {name: gpu-002, address: 10.0.0.2, roles: [worker]}\n"
	if nvidiaBlock != "" {
		doc += "  nvidia: {" + nvidiaBlock + "}\n"
	}
	inv, err := inventory.Parse("t.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return inv
}

// fresh are the inventory's two hosts as the GPU simulator makes them:
// one GPU each, nothing installed; set changes the hosts it names.
func fresh(t *testing.T, set map[string]func(h *scriptsim.Host)) *scriptsim.Sim {
	t.Helper()
	hosts := map[string]scriptsim.Host{}
	for _, name := range []string{"gpu-001", "gpu-002"} {
		h := scriptsim.Fresh(1)
		if f := set[name]; f != nil {
			f(&h)
		}
		hosts[name] = h
	}
	sim, err := scriptsim.New("", hosts)
	if err != nil {
		t.Fatal(err)
	}
	return sim
}

// initRun runs preflight and the NVIDIA layer as `gpukit init` lists them.
func initRun(t *testing.T, inv *inventory.Inventory, sim *scriptsim.Sim, dryRun bool) (*engine.Summary, *enginetest.Fleet, *enginetest.Recorder) {
	t.Helper()
	checks := preflight.New(inv)
	l := nvidia.New(inv, nvidia.Options{MaxParallelReboots: 1, RebootTimeout: time.Minute})
	phases := []engine.Phase{checks.Facts(), checks.HostChecks(), checks.ClusterChecks(),
		l.Prepare(), l.Driver(), l.FabricManager(), l.Persistenced(), l.CUDA(), l.ContainerToolkit(), l.Reboot(), l.Verify()}
	fleet := sim.Fleet()
	rec := &enginetest.Recorder{}
	r := &engine.Runner{Name: "gpukit init", Phases: phases, DryRun: dryRun, Sink: rec, ReconnectInterval: 10 * time.Millisecond}
	sum, _ := r.Run(context.Background(), inv.Machines, fleet.Dial)
	return sum, fleet, rec
}

// writes are the write steps that ran (the reads and the wait for a reboot
// left out), as host:step, from the run's events: they survive reconnects.
func writes(rec *enginetest.Recorder) []string {
	var out []string
	for _, e := range rec.OfType(event.StepStart) {
		switch e.Step {
		case "probe", "read the NVIDIA state", "read the GPUs' health", "wait for the host to come back", "wait for the boot to finish":
		default:
			out = append(out, e.Host+":"+e.Step)
		}
	}
	sort.Strings(out)
	return out
}

// A fresh host is prepared, gets the driver, persistence mode and the
// container toolkit, reboots once (nouveau was loaded) and verifies; a
// second run finds it converged and writes nothing.
func TestInitConvergesAndIsIdempotent(t *testing.T) {
	t.Parallel()
	inv := testInventory(t, "")
	sim := fresh(t, nil)
	sum, _, rec := initRun(t, inv, sim, false)
	if c := sum.HostCounts(); c.Changed != 2 || c.Failed != 0 {
		t.Fatalf("first run: %+v\n%+v", c, sum.Hosts)
	}
	for _, h := range sum.Hosts {
		if boot := sim.Host(h.Host).Boot; boot != 2 {
			t.Errorf("%s booted %d times, want one reboot", h.Host, boot-1)
		}
	}
	w := writes(rec)
	want := []string{"container toolkit 1.20.0", "driver 580.95.05 (open modules, cuda-repo)", "headers, DKMS and nouveau", "nvidia-persistenced", "package source", "reboot"}
	if len(w) != 2*len(want) || w[0] != "gpu-001:"+want[0] {
		t.Errorf("writes %v", w)
	}
	sum, _, rec = initRun(t, inv, sim, false)
	if c := sum.HostCounts(); c.Changed != 0 || c.Unchanged != 2 || c.Failed != 0 {
		t.Errorf("second run: %+v %+v", c, sum.Hosts)
	}
	if w := writes(rec); len(w) != 0 {
		t.Errorf("second run wrote %v", w)
	}
}

// A dry-run on a fresh host runs no write, plans them all, and says the
// hosts would change; verify waits for the real run.
func TestInitDryRun(t *testing.T) {
	t.Parallel()
	inv := testInventory(t, "")
	sum, fleet, rec := initRun(t, inv, fresh(t, nil), true)
	for host, e := range fleet.Executors() {
		for _, n := range e.Names() {
			if n != "probe facts" && n != "nvidia state" {
				t.Errorf("dry-run ran %q on %s", n, host)
			}
		}
	}
	if c := sum.HostCounts(); c.Changed != 2 || c.Failed != 0 {
		t.Errorf("dry-run counts %+v %+v", c, sum.Hosts)
	}
	planned := map[string]bool{}
	for _, e := range rec.OfType(event.Planned) {
		if e.Host == "gpu-001" {
			planned[e.Step] = true
			if e.Script == "" && e.Message == "" {
				t.Errorf("planned %s without its script", e.Step)
			}
		}
	}
	for _, step := range []string{"headers, DKMS and nouveau", "package source", "driver 580.95.05 (open modules, cuda-repo)", "reboot"} {
		if !planned[step] {
			t.Errorf("dry-run did not plan %q; planned %v", step, planned)
		}
	}
}

// One host's driver install fails: it is named, the other finishes; a
// re-run converges.
func TestInitPartialFailureConverges(t *testing.T) {
	t.Parallel()
	inv := testInventory(t, "")
	sim := fresh(t, map[string]func(*scriptsim.Host){"gpu-002": func(h *scriptsim.Host) { h.InstallFails = "E: broken package" }})
	sum, _, _ := initRun(t, inv, sim, false)
	h, _ := sum.Host("gpu-002")
	if h.Status != engine.StatusFailed || h.Phase != nvidia.PhaseDriver || !strings.Contains(h.Err.Error(), "broken package") {
		t.Errorf("gpu-002: %s %s %v", h.Status, h.Phase, h.Err)
	}
	if h, _ := sum.Host("gpu-001"); h.Status != engine.StatusOK || sim.Host("gpu-001").Loaded != "580.95.05" {
		t.Errorf("gpu-001 did not finish: %+v", h)
	}
	if err := sim.Update("gpu-002", func(h *scriptsim.Host) { h.InstallFails = "" }); err != nil {
		t.Fatal(err)
	}
	sum, _, _ = initRun(t, inv, sim, false)
	if c := sum.HostCounts(); c.Failed != 0 || c.Changed != 1 || c.Unchanged != 1 {
		t.Errorf("re-run: %+v", c)
	}
}

// Secure Boot on with the default choice: the run stops in preflight,
// before anything is installed, naming the options.
func TestInitSecureBootRefused(t *testing.T) {
	t.Parallel()
	inv := testInventory(t, "")
	sim := fresh(t, map[string]func(*scriptsim.Host){"gpu-002": func(h *scriptsim.Host) { h.SecureBoot = true }})
	sum, _, rec := initRun(t, inv, sim, false)
	h, _ := sum.Host("gpu-002")
	if h.Status != engine.StatusFailed || h.Phase != preflight.PhaseChecks || !strings.Contains(h.Err.Error(), "choose spec.nvidia.secureBoot: signed or mok") {
		t.Errorf("gpu-002: %s %s %v", h.Status, h.Phase, h.Err)
	}
	if w := writes(rec); len(w) != 0 {
		t.Errorf("writes after a failed preflight: %v", w)
	}
}

// A Volta GPU gets the proprietary modules (cuda-drivers).
func TestVoltaGetsProprietaryModules(t *testing.T) {
	t.Parallel()
	inv := testInventory(t, "")
	sim := fresh(t, map[string]func(*scriptsim.Host){"gpu-001": func(h *scriptsim.Host) { h.Device = "0x1db4" }})
	_, _, rec := initRun(t, inv, sim, true)
	for _, e := range rec.OfType(event.Planned) {
		if strings.HasPrefix(e.Step, "driver ") {
			want := map[string]string{"gpu-001": "pkgs=(cuda-drivers)", "gpu-002": "pkgs=(nvidia-open)"}[e.Host]
			if !strings.Contains(e.Script, want) || !strings.Contains(e.Step, map[string]string{"gpu-001": "proprietary", "gpu-002": "open"}[e.Host]) {
				t.Errorf("%s: %s lacks %q", e.Host, e.Step, want)
			}
		}
	}
}

// A GPU with uncorrectable ECC errors fails verification, named with the
// reason; the healthy host passes.
func TestVerifyChecksGPUHealth(t *testing.T) {
	t.Parallel()
	inv := testInventory(t, "")
	sim := fresh(t, map[string]func(*scriptsim.Host){"gpu-002": func(h *scriptsim.Host) { h.ECCErrors = 3 }})
	sum, _, _ := initRun(t, inv, sim, false)
	h, _ := sum.Host("gpu-002")
	// 00000000:00:09.0: the bus id of the H100 of the capture the GPUs replay
	if h.Status != engine.StatusFailed || h.Phase != nvidia.PhaseVerify || !strings.Contains(h.Err.Error(), "GPU 00000000:00:09.0") ||
		!strings.Contains(h.Err.Error(), "uncorrectable") {
		t.Errorf("gpu-002: %s %s %v", h.Status, h.Phase, h.Err)
	}
	if h, _ := sum.Host("gpu-001"); h.Status != engine.StatusOK {
		t.Errorf("gpu-001: %s %v", h.Status, h.Err)
	}
}

func TestCheckCUDA(t *testing.T) {
	for _, tc := range []struct {
		cuda, driver string
		wantErr      string
	}{
		{"", "535.261.03", ""},
		{"13.0", "580", ""},                   // a branch: its newest release
		{"13.0", "580.95.05", ""},             // new enough
		{"13.0", "580.10.01", "needs driver"}, // a release of the branch, too old
		{"13.0", "570", "needs driver"},       // an older branch
		{"99.0", "580.95.05", ""},             // newer than the table: validation warned
		{"13.0", "not-a-driver", "driver \"not-a-driver\""},
	} {
		err := nvidia.Want{CUDA: tc.cuda}.CheckCUDA(tc.driver)
		if (tc.wantErr == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("CUDA %q, driver %q: %v, want %q", tc.cuda, tc.driver, err, tc.wantErr)
		}
	}
}

func TestUpstream(t *testing.T) {
	for in, want := range map[string]string{
		"580.95.05-1":          "580.95.05",
		"1:580.95.05-1ubuntu1": "580.95.05",
		"535.309.01-0+deb12u1": "535.309.01",
		"1.17.8-1":             "1.17.8",
		"2.0-rc1-3":            "2.0-rc1", // the revision is after the last hyphen
		"580.95.05":            "580.95.05",
	} {
		if got := nvidia.Upstream(in); got != want {
			t.Errorf("Upstream(%q) = %q, want %q", in, got, want)
		}
	}
}

// A driver change gets into memory without a reboot where nothing holds the
// old modules: they are swapped on the host, which keeps its boot. Where
// the swap cannot be done (the modules held, processes computing, nouveau,
// or the inventory asks for reboots) the host reboots instead, and the
// reason is in its log. A dry-run plans the swap, not a reboot.
func TestDriverChangeSwapsModulesWithoutAReboot(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, nvidia string
		host         func(h *scriptsim.Host)
		reboots      bool
		swapTried    bool
		why          string
	}{
		{name: "modules free", host: func(h *scriptsim.Host) { h.RuntimeModules = true }, swapTried: true},
		{name: "modules held", host: func(*scriptsim.Host) {}, reboots: true, swapTried: true,
			why: "gpukit: not swapped: modprobe -r nvidia: modprobe: FATAL: Module nvidia is in use."},
		{name: "processes computing", host: func(h *scriptsim.Host) {
			h.RuntimeModules, h.ComputeApps = true, "4242, python, 1024 MiB"
		}, reboots: true, swapTried: true, why: "gpukit: not swapped: processes compute on the GPUs: 4242, python, 1024 MiB"},
		{name: "policy always", nvidia: "rebootPolicy: always", host: func(h *scriptsim.Host) { h.RuntimeModules = true },
			reboots: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			inv := testInventory(t, c.nvidia)
			hosts := map[string]scriptsim.Host{}
			for _, name := range []string{"gpu-001", "gpu-002"} {
				h := scriptsim.Installed("570.172.08", 1)
				c.host(&h)
				hosts[name] = h
			}
			sim, err := scriptsim.New("", hosts)
			if err != nil {
				t.Fatal(err)
			}
			sum, _, rec := initRun(t, inv, sim, false)
			if n := sum.HostCounts(); n.Changed != 2 || n.Failed != 0 {
				t.Fatalf("counts %+v %+v", n, sum.Hosts)
			}
			w := strings.Join(writes(rec), "\n")
			const swapStep = "gpu-001:swap the kernel modules for driver 580.95.05"
			if strings.Contains(w, swapStep) != c.swapTried || strings.Contains(w, "gpu-001:reboot") != c.reboots {
				t.Errorf("writes (swap tried %v, reboot %v):\n%s", c.swapTried, c.reboots, w)
			}
			h := sim.Host("gpu-001")
			if boots := h.Boot - 1; h.Loaded != "580.95.05" || (boots == 1) != c.reboots || h.RebootRequired {
				t.Errorf("gpu-001: loaded %s after %d reboots, marker %v", h.Loaded, boots, h.RebootRequired)
			}
			var said strings.Builder
			for _, e := range rec.OfType(event.Output) {
				if e.Host == "gpu-001" {
					said.WriteString(e.Line + "\n")
				}
			}
			if c.why != "" && !strings.Contains(said.String(), c.why) {
				t.Errorf("gpu-001's output does not say %q:\n%s", c.why, said.String())
			}
			if !c.reboots && !h.PersistencedActive {
				t.Errorf("the persistence daemon was not started again")
			}
			if sum, _, _ := initRun(t, inv, sim, false); sum.HostCounts().Changed != 0 {
				t.Errorf("second run: %+v", sum.HostCounts())
			}
		})
	}

	t.Run("dry-run", func(t *testing.T) {
		t.Parallel()
		inv := testInventory(t, "")
		h := scriptsim.Installed("570.172.08", 1)
		h.RuntimeModules = true
		sim, err := scriptsim.New("", map[string]scriptsim.Host{"gpu-001": h, "gpu-002": h})
		if err != nil {
			t.Fatal(err)
		}
		_, _, rec := initRun(t, inv, sim, true)
		var planned []string
		for _, e := range rec.OfType(event.Planned) {
			if e.Host == "gpu-001" {
				planned = append(planned, e.Step)
			}
		}
		if !slices.Contains(planned, "swap the kernel modules for driver 580.95.05") || slices.Contains(planned, "reboot") {
			t.Errorf("planned %v", planned)
		}
	})
}

// Only a reboot helps where nouveau holds the GPUs or something other than
// the driver's install asked for one; a driver mismatch alone may be swapped.
func TestSwapBlocker(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		s    nvidia.State
		want string
	}{
		{"driver mismatch", nvidia.State{ModuleLoaded: "580.95.05", ModuleInstalled: "590.48.01", RebootRequired: []string{"gpukit"},
			RebootWhy: []string{"driver 580.95.05 loaded, 590.48.01 installed"}}, ""},
		{"nothing loaded", nvidia.State{ModuleInstalled: "590.48.01"}, ""},
		{"nouveau", nvidia.State{NouveauLoaded: true, ModuleInstalled: "590.48.01"}, "nouveau is loaded"},
		{"the OS asks", nvidia.State{RebootRequired: []string{"system"}}, "the OS asks for a reboot (/var/run/reboot-required)"},
		{"nouveau blacklisted this run", nvidia.State{RebootRequired: []string{"gpukit"}, RebootWhy: []string{"nouveau", "driver none loaded, 590.48.01 installed"}},
			"a reboot is required (nouveau)"},
	} {
		if got := c.s.SwapBlocker(); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
