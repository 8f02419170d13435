package nvidia_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/engine/enginetest"
	"github.com/gpukit/gpukit/pkg/event"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/nvidia"
	"github.com/gpukit/gpukit/pkg/preflight"
	"github.com/gpukit/gpukit/pkg/ssh"
)

// simHost is a Debian 12 GPU host as the layer's scripts see it: each
// script, recognised by its command name, changes the simulated state the
// way the real one changes the real host. It is a unit-test model; the lab
// tests run the real scripts on real hosts.
type simHost struct {
	mu            sync.Mutex
	secureBoot    bool
	device        string // PCI device id
	nouveauLoaded bool
	blacklisted   bool
	headers, dkms bool
	pkgs          map[string]string // name -> version
	held          map[string]bool
	uu, dropin    bool
	persistenced  bool
	loaded        string // driver in memory
	marker        []string
	boot          int
	rebooting     int // dials to refuse before the host is back
	failDriver    bool
	eccErrors     int // volatile uncorrectable ECC errors nvidia-smi -q -x reports
}

func newSim() *simHost {
	return &simHost{device: "0x2330", nouveauLoaded: true, pkgs: map[string]string{}, held: map[string]bool{}, boot: 1}
}

const factsOut = `os.id=debian
os.version=12
os.pretty=Debian GNU/Linux 12 (bookworm)
kernel=6.1.0-26-amd64
arch=x86_64
hostname=%s
cpus=64
mem.kib=528000000
root.avail.kib=400000000
machine_id=id-%s
secureboot=%s
init=systemd
timesync=yes
timesync.service=chrony
pci.gpu=0000:17:00.0 %s
listen.tcp=22
`

func (s *simHost) handle(_ context.Context, e *enginetest.Executor, cmd ssh.Command) (ssh.Result, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := func(text string) (ssh.Result, error) { return ssh.Result{Stdout: []byte(text)}, nil }
	switch cmd.Name {
	case "probe facts":
		sb := "SecureBoot disabled"
		if s.secureBoot {
			sb = "SecureBoot enabled"
		}
		return out(fmt.Sprintf(factsOut, e.Host, e.Host, sb, s.device))
	case "nvidia state":
		return out(s.state())
	case "prepare for the driver":
		s.headers, s.dkms, s.blacklisted = true, true, true
		s.pkgs["dkms"] = "3.0.10-8"
		if s.nouveauLoaded {
			s.marker = append(s.marker, "nouveau")
		}
		return out("")
	case "set up the driver's package source":
		return out("")
	case "install the driver":
		if s.failDriver {
			return ssh.Result{ExitCode: 100, Stderr: []byte("E: broken package")}, &ssh.ExitError{Command: "install the driver", Code: 100, StderrTail: "E: broken package"}
		}
		for _, p := range []string{"nvidia-open", "nvidia-driver-580-open", "libnvidia-compute-580"} {
			s.pkgs[p] = "580.95.05-1"
			s.held[p] = true
		}
		s.uu = true
		if s.loaded != "580.95.05" {
			s.marker = append(s.marker, "driver")
		}
		return out("")
	case "enable persistence mode":
		s.dropin, s.persistenced = true, true
		s.pkgs["nvidia-persistenced"] = "580.95.05-1"
		s.held["nvidia-persistenced"] = true
		return out("")
	case "install the container toolkit":
		for _, p := range []string{"nvidia-container-toolkit", "nvidia-container-toolkit-base", "libnvidia-container-tools", "libnvidia-container1"} {
			s.pkgs[p] = "1.20.0-1"
			s.held[p] = true
		}
		return out("")
	case "reboot":
		s.rebooting = 2
		return out("")
	case "wait for the boot to finish":
		return out("system running")
	case "nvidia health":
		return out(fmt.Sprintf(healthXML, s.loaded, s.eccErrors))
	}
	return ssh.Result{ExitCode: 127}, fmt.Errorf("simHost: unexpected command %q", cmd.Name)
}

// dial refuses connections while the host reboots, then brings it back.
func (s *simHost) dial(context.Context, string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rebooting == 0 {
		return nil
	}
	s.rebooting--
	if s.rebooting > 0 {
		return errors.New("dial tcp: connect: connection refused")
	}
	s.boot++
	s.marker = nil
	s.nouveauLoaded = false
	if s.pkgs["nvidia-open"] != "" && !s.secureBoot {
		s.loaded = "580.95.05"
	}
	return nil
}

// healthXML is the shape of nvidia-smi -q -x for one GPU (driver, volatile
// uncorrectable ECC errors).
const healthXML = `<?xml version="1.0" ?>
<nvidia_smi_log>
  <driver_version>%s</driver_version>
  <attached_gpus>1</attached_gpus>
  <gpu id="00000000:17:00.0">
    <product_name>NVIDIA H100 80GB HBM3</product_name>
    <persistence_mode>Enabled</persistence_mode>
    <ecc_mode><current_ecc>Enabled</current_ecc><pending_ecc>Enabled</pending_ecc></ecc_mode>
    <ecc_errors>
      <volatile><dram_uncorrectable>%d</dram_uncorrectable></volatile>
    </ecc_errors>
  </gpu>
</nvidia_smi_log>
`

func (s *simHost) state() string {
	var b strings.Builder
	kv := func(k, v string) { fmt.Fprintf(&b, "%s=%s\n", k, v) }
	kv("kernel", "6.1.0-26-amd64")
	kv("boot_id", fmt.Sprintf("boot-%d", s.boot))
	if s.headers {
		kv("headers", "yes")
	}
	if s.loaded != "" {
		kv("module.loaded", s.loaded)
	}
	if s.nouveauLoaded {
		kv("nouveau.loaded", "yes")
	}
	if s.blacklisted {
		kv("nouveau.blacklisted", "yes")
	}
	if len(s.marker) > 0 {
		kv("reboot.required", "gpukit")
	}
	names := make([]string, 0, len(s.pkgs))
	for n := range s.pkgs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		h := "no"
		if s.held[n] {
			h = "yes"
		}
		kv("pkg", n+" "+s.pkgs[n]+" "+h)
	}
	if s.uu {
		kv("unattended.blacklist", "yes")
	}
	if s.dropin {
		kv("persistenced.dropin", "yes")
	}
	en := "disabled"
	if s.persistenced {
		en = "enabled"
	}
	kv("service", "nvidia-persistenced "+en+" active")
	kv("nvswitch.pci", "0")
	if s.loaded != "" {
		kv("smi.gpu", "0, GPU-1, NVIDIA H100 80GB HBM3, 81559, "+s.loaded+", Disabled, Enabled")
	} else if s.pkgs["nvidia-open"] != "" {
		kv("smi.error", "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.")
	}
	return b.String()
}

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

// initRun runs preflight and the NVIDIA layer as `gpukit init` lists them.
func initRun(t *testing.T, inv *inventory.Inventory, sims map[string]*simHost, dryRun bool) (*engine.Summary, *enginetest.Fleet, *enginetest.Recorder) {
	t.Helper()
	checks := preflight.New(inv)
	l := nvidia.New(inv, nvidia.Options{MaxParallelReboots: 1, RebootTimeout: time.Minute})
	phases := []engine.Phase{checks.Facts(), checks.HostChecks(), checks.ClusterChecks(),
		l.Prepare(), l.Driver(), l.FabricManager(), l.Persistenced(), l.CUDA(), l.ContainerToolkit(), l.Reboot(), l.Verify()}
	fleet := &enginetest.Fleet{
		Handler: func(ctx context.Context, e *enginetest.Executor, cmd ssh.Command) (ssh.Result, error) {
			return sims[e.Host].handle(ctx, e, cmd)
		},
		BeforeDial: func(ctx context.Context, host string) error { return sims[host].dial(ctx, host) },
	}
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
	sims := map[string]*simHost{"gpu-001": newSim(), "gpu-002": newSim()}
	sum, _, rec := initRun(t, inv, sims, false)
	if c := sum.HostCounts(); c.Changed != 2 || c.Failed != 0 {
		t.Fatalf("first run: %+v\n%+v", c, sum.Hosts)
	}
	for _, h := range sum.Hosts {
		if sims[h.Host].boot != 2 {
			t.Errorf("%s booted %d times, want one reboot", h.Host, sims[h.Host].boot-1)
		}
	}
	w := writes(rec)
	want := []string{"container toolkit 1.20.0", "driver 580.95.05 (open modules, cuda-repo)", "headers, DKMS and nouveau", "nvidia-persistenced", "package source", "reboot"}
	if len(w) != 2*len(want) || w[0] != "gpu-001:"+want[0] {
		t.Errorf("writes %v", w)
	}
	sum, _, rec = initRun(t, inv, sims, false)
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
	sims := map[string]*simHost{"gpu-001": newSim(), "gpu-002": newSim()}
	sum, fleet, rec := initRun(t, inv, sims, true)
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
	sims := map[string]*simHost{"gpu-001": newSim(), "gpu-002": newSim()}
	sims["gpu-002"].failDriver = true
	sum, _, _ := initRun(t, inv, sims, false)
	h, _ := sum.Host("gpu-002")
	if h.Status != engine.StatusFailed || h.Phase != nvidia.PhaseDriver || !strings.Contains(h.Err.Error(), "broken package") {
		t.Errorf("gpu-002: %s %s %v", h.Status, h.Phase, h.Err)
	}
	if h, _ := sum.Host("gpu-001"); h.Status != engine.StatusOK || sims["gpu-001"].loaded != "580.95.05" {
		t.Errorf("gpu-001 did not finish: %+v", h)
	}
	sims["gpu-002"].failDriver = false
	sum, _, _ = initRun(t, inv, sims, false)
	if c := sum.HostCounts(); c.Failed != 0 || c.Changed != 1 || c.Unchanged != 1 {
		t.Errorf("re-run: %+v", c)
	}
}

// Secure Boot on with the default choice: the run stops in preflight,
// before anything is installed, naming the options.
func TestInitSecureBootRefused(t *testing.T) {
	t.Parallel()
	inv := testInventory(t, "")
	sims := map[string]*simHost{"gpu-001": newSim(), "gpu-002": newSim()}
	sims["gpu-002"].secureBoot = true
	sum, _, rec := initRun(t, inv, sims, false)
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
	sims := map[string]*simHost{"gpu-001": newSim(), "gpu-002": newSim()}
	sims["gpu-001"].device = "0x1db4"
	_, _, rec := initRun(t, inv, sims, true)
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
	sims := map[string]*simHost{"gpu-001": newSim(), "gpu-002": newSim()}
	sims["gpu-002"].eccErrors = 3
	sum, _, _ := initRun(t, inv, sims, false)
	h, _ := sum.Host("gpu-002")
	if h.Status != engine.StatusFailed || h.Phase != nvidia.PhaseVerify || !strings.Contains(h.Err.Error(), "GPU 00000000:17:00.0") ||
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
