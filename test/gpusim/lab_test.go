package gpusim

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpukit/gpukit/manifests"
	"github.com/gpukit/gpukit/pkg/facts"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/nvidia"
	"github.com/gpukit/gpukit/pkg/osfamily"
	"github.com/gpukit/gpukit/pkg/scripts"
	"github.com/gpukit/gpukit/pkg/ssh"
	"github.com/gpukit/gpukit/test/aptrepo"
	"github.com/gpukit/gpukit/test/gpusim/hoststate"
	"github.com/gpukit/gpukit/test/lab"
)

// simHost drives one lab host of the test: gpukit's rendered scripts over
// gpukit's SSH transport, as root, on one connection that is made again when
// it was lost (the host rebooted).
type simHost struct {
	l    *lab.Lab
	name string

	mu sync.Mutex
	c  *ssh.Client // nil: dial on the next command
}

// newSimHost is host name of l; the test's end closes its connection.
func newSimHost(t *testing.T, l *lab.Lab, name string) *simHost {
	h := &simHost{l: l, name: name}
	t.Cleanup(h.disconnect)
	return h
}

// client is the host's connection, dialed if there is none.
func (h *simHost) client(ctx context.Context) (*ssh.Client, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.c == nil {
		c, err := DialRoot(ctx, h.l, h.name)
		if err != nil {
			return nil, err
		}
		h.c = c
	}
	return h.c, nil
}

// disconnect drops the connection: the next command dials again.
func (h *simHost) disconnect() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.c != nil {
		h.c.Close()
		h.c = nil
	}
}

// try returns a runner of gpukit's rendered commands on the host (it takes a
// renderer's results as they are).
func (h *simHost) try(t *testing.T) func(ssh.Command, error) (ssh.Result, error) {
	t.Helper()
	return func(cmd ssh.Command, err error) (ssh.Result, error) { return h.run(t, cmd, err) }
}

func (h *simHost) run(t *testing.T, cmd ssh.Command, err error) (ssh.Result, error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: rendering %s: %v", h.name, cmd.Name, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	return h.exec(ctx, cmd)
}

// exec runs cmd as root on the host's connection; any failure but the
// command's own drops the connection.
func (h *simHost) exec(ctx context.Context, cmd ssh.Command) (ssh.Result, error) {
	c, err := h.client(ctx)
	if err != nil {
		return ssh.Result{}, err
	}
	cmd.Sudo = true
	res, err := c.Run(ctx, cmd)
	if exit := (*ssh.ExitError)(nil); err != nil && !errors.As(err, &exit) {
		h.disconnect()
	}
	return res, err
}

// must is try that fails the test when the command fails, and returns its output.
func (h *simHost) must(t *testing.T) func(ssh.Command, error) string {
	t.Helper()
	return func(cmd ssh.Command, err error) string { return h.mustRun(t, cmd, err) }
}

func (h *simHost) mustRun(t *testing.T, cmd ssh.Command, err error) string {
	t.Helper()
	res, err := h.run(t, cmd, err)
	if err != nil {
		t.Fatalf("%s: %s: %v\nstdout: %s\nstderr: %s", h.name, cmd.Name, err, lab.Tail(res.Stdout), lab.Tail(res.Stderr))
	}
	return string(res.Stdout)
}

// sh runs a shell snippet as root and returns its output and exit code.
func (h *simHost) sh(t *testing.T, script string) (string, int) {
	t.Helper()
	res, err := h.run(t, ssh.Command{Name: "check", Script: script}, nil)
	if exit := (*ssh.ExitError)(nil); err != nil && !errors.As(err, &exit) {
		t.Fatalf("%s: %s: %v", h.name, script, err)
	}
	return strings.TrimSpace(string(res.Stdout) + string(res.Stderr)), res.ExitCode
}

// state reads the host the way gpukit's NVIDIA layer does.
func (h *simHost) state(t *testing.T) *nvidia.State {
	t.Helper()
	out := h.must(t)(scripts.NVIDIAState(scripts.NVIDIAStateParams{GPUFields: facts.GPUQueryFields()}))
	s, err := nvidia.ParseState([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// facts probe the host the way gpukit's preflight does.
func (h *simHost) facts(t *testing.T) *facts.Facts {
	t.Helper()
	out := h.must(t)(scripts.Probe(scripts.ProbeParams{GPUFields: facts.GPUQueryFields()}))
	f, err := facts.Parse([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// reboot reboots the host as gpukit's nvidia/reboot phase does: the reboot
// command, then the state probe on a new connection until its boot id
// changes, then the wait for the boot to finish.
func (h *simHost) reboot(t *testing.T) {
	t.Helper()
	before := h.state(t).BootID
	h.must(t)(scripts.Reboot())
	probe, err := scripts.NVIDIAState(scripts.NVIDIAStateParams{GPUFields: facts.GPUQueryFields()})
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s did not come back from its reboot within 2 min", h.name)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second) // a connection the reboot cut may hang
		res, err := h.exec(ctx, probe)
		cancel()
		if err != nil {
			continue // going down, down, or not answering yet
		}
		if s, err := nvidia.ParseState(res.Stdout); err == nil && s.BootID != "" && s.BootID != before {
			break
		}
	}
	h.must(t)(scripts.WaitBoot(scripts.WaitBootParams{TimeoutSeconds: 120}))
}

// parallel runs f for each host at once, as parallel subtests, and waits.
func parallel(t *testing.T, hosts []*simHost, f func(*testing.T, *simHost)) {
	t.Helper()
	t.Run("hosts", func(t *testing.T) {
		for _, h := range hosts {
			t.Run(h.name, func(t *testing.T) { t.Parallel(); f(t, h) })
		}
	})
}

// kernelModules lists this machine's /sys/module, but the modules the
// simulation decides on (nvidia*, nouveau).
func kernelModules(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir("/sys/module")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if n := e.Name(); !strings.HasPrefix(n, "nvidia") && n != "nouveau" {
			names = append(names, n)
		}
	}
	if !slices.Contains(names, "printk") {
		t.Fatalf("this machine's /sys/module lacks printk: %v", names)
	}
	return names
}

func fixture(t *testing.T, name string) Capture {
	t.Helper()
	c := Capture{Prefix: filepath.Join(FixturesDir(t), name)}
	if _, err := c.Files(); err != nil {
		t.Fatal(err)
	}
	return c
}

// copyCapture copies a capture to dir under another name: a capture from
// anywhere on this machine, not only the fixtures.
func copyCapture(t *testing.T, c Capture, dir, name string) Capture {
	t.Helper()
	files, err := c.Files()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		kind := strings.TrimPrefix(filepath.Base(f), filepath.Base(c.Prefix))
		if err := os.WriteFile(filepath.Join(dir, name+kind), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return Capture{Prefix: filepath.Join(dir, name)}
}

// TestLabGPUSimulator drives three simulated GPU hosts through what gpukit's
// NVIDIA layer does to them, with its own rendered Debian 12 scripts over its
// own SSH transport: package sources, driver install and holds, a failed
// install, reboots, a downgrade with its version mismatch, nouveau,
// persistence mode, the fabric manager, CUDA and the container toolkit.
func TestLabGPUSimulator(t *testing.T) {
	lab.Require(t)
	aptrepo.RequireTools(t, "dpkg-deb", "dpkg-scanpackages", "gpg")
	l := lab.Start(t, lab.Options{Hosts: 4}) // lab-4: the replay-only simulation
	// before the simulation covers /sys/module: the machine's modules, which lab hosts see
	realModules := kernelModules(t)
	h100 := fixture(t, "h100-80gb-hbm3__drv590.48.01")
	// a capture outside the fixtures, under a name of its own
	l40s := copyCapture(t, fixture(t, "l40s__drv595.80"), t.TempDir(), "my-l40s__drv595.80")
	rtx := fixture(t, "rtx-2080-super__drv610.57.04")
	repo := Simulate(t, l, map[string]Hardware{
		"lab-1": {Capture: h100, NVSwitches: 4},
		"lab-2": {Capture: l40s, Nouveau: true},
		"lab-3": {Capture: rtx},
	})
	hosts := []*simHost{newSimHost(t, l, "lab-1"), newSimHost(t, l, "lab-2"), newSimHost(t, l, "lab-3")}
	h1, h2, h3 := hosts[0], hosts[1], hosts[2]
	for _, h := range hosts {
		l.SetRebootDelay(t, h.name, 0)
	}
	deb12, err := osfamily.Detect("debian", "12")
	if err != nil {
		t.Fatal(err)
	}
	driver := func(release, flavor string) (ssh.Command, error) {
		// every package of the release at its version (see DriverPackages), and
		// the persistence daemon of the same release
		return scripts.NVIDIADriver(scripts.NVIDIADriverParams{Family: deb12, Version: release,
			Packages: append(DriverPackages(release, flavor), "nvidia-persistenced")})
	}

	t.Run("hardware", func(t *testing.T) {
		f := h1.facts(t)
		if len(f.PCIGPUs) != 1 || f.PCIGPUs[0].Address != "0000:00:09.0" || f.PCIGPUs[0].DeviceID != "0x2330" {
			t.Errorf("lab-1 PCI GPUs %+v, want the H100 of the capture at 0000:00:09.0, device 0x2330", f.PCIGPUs)
		}
		if f.NvidiaSMI || f.LoadedDriver != "" || f.NouveauLoaded {
			t.Errorf("lab-1 before any driver: nvidia-smi %v, loaded %q, nouveau %v", f.NvidiaSMI, f.LoadedDriver, f.NouveauLoaded)
		}
		if s := h1.state(t); s.NVSwitchPCI != 4 || s.ModuleLoaded != "" || len(s.SMI) != 0 {
			t.Errorf("lab-1 state: %d NVSwitches, module %q, GPUs %v", s.NVSwitchPCI, s.ModuleLoaded, s.SMI)
		}
		if f := h2.facts(t); len(f.PCIGPUs) != 1 || f.PCIGPUs[0].DeviceID != "0x26b9" || !f.NouveauLoaded {
			t.Errorf("lab-2: PCI GPUs %+v, nouveau %v; want the L40S and nouveau loaded", f.PCIGPUs, f.NouveauLoaded)
		}
		if out, code := h3.sh(t, "modprobe nvidia"); code == 0 || !strings.Contains(out, "GPU SIMULATOR") {
			t.Errorf("modprobe nvidia: exit %d: %s", code, out)
		}
		if out, _ := h3.sh(t, "lspci -nn -s 0c:00.0; systemctl is-active gpusim-boot; test -e /lib/modules/$(uname -r)/build && echo headers"); !strings.Contains(out, "VGA compatible controller [0300]: NVIDIA Corporation") || !strings.Contains(out, "[10de:1e81] (rev a1)") ||
			!strings.Contains(out, "\nactive\n") || !strings.HasSuffix(out, "headers") {
			t.Errorf("lab-3: %s", out)
		}
		// the simulation covers /sys/module: the real modules stay visible through it
		out, _ := h3.sh(t, "ls -1 /sys/module")
		seen := map[string]bool{}
		for _, m := range strings.Fields(out) {
			seen[m] = true
		}
		var hidden []string
		for _, m := range realModules {
			if _, err := os.Lstat(filepath.Join("/sys/module", m)); err == nil && !seen[m] { // (still loaded here)
				hidden = append(hidden, m)
			}
		}
		if len(hidden) > 0 || !seen["printk"] {
			t.Errorf("lab-3's /sys/module (%d entries) hides real modules %v of the %d here", len(seen), hidden, len(realModules))
		}
	})

	t.Run("replay only", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		bin, err := BuildNvidiaSMI(ctx, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		h4 := newSimHost(t, l, "lab-4")
		c, err := h4.client(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := Install(ctx, c, h100, bin); err != nil {
			t.Fatal(err)
		}
		if f := h4.facts(t); len(f.GPUs) != 1 || f.GPUs[0].Driver != "590.48.01" || len(f.PCIGPUs) != 0 {
			t.Errorf("lab-4: GPUs %+v, PCI GPUs %+v; want the capture as recorded and no PCI devices", f.GPUs, f.PCIGPUs)
		}
		if out, code := h4.sh(t, "touch "+hoststate.MismatchFile+"; nvidia-smi"); code != 18 || !strings.Contains(out, "version mismatch") {
			t.Errorf("lab-4 with %s: exit %d: %s", hoststate.MismatchFile, code, out)
		}
	})

	t.Run("repository", func(t *testing.T) {
		cudaRepo := func(url string, key manifests.SigningKey) (ssh.Command, error) {
			return scripts.NVIDIARepo(scripts.NVIDIARepoParams{Family: deb12, Source: "cuda-repo", Arch: "x86_64",
				RepoURL: url, Components: []string{"contrib"}, Key: key})
		}
		sources := "ls /usr/share/keyrings/cuda-archive-keyring.gpg /etc/apt/sources.list.d/cuda-debian12-x86_64.list 2>&1"
		// The inventory forgot to name the mirror's key: the mirror's key is
		// not NVIDIA's, and nothing is written.
		res, err := h2.try(t)(cudaRepo(repo.CUDA, (inventory.Mirrors{}).SigningKey(manifests.RepoCUDA, "apt")))
		if want := "key " + repo.KeyFingerprint + " is not pinned (pinned: EB693B3035CD5710E231E123A4B469963BF863CC)"; err == nil || !strings.Contains(string(res.Stderr), want) {
			t.Errorf("a mirror's key not pinned: %v, want a refusal with %q:\n%s", err, want, lab.Tail(res.Stderr))
		}
		if out, _ := h2.sh(t, sources); strings.Count(out, "No such file") != 2 {
			t.Errorf("after the refusal:\n%s", out)
		}
		// A mirror whose key is pinned but whose indexes another key signed
		// (Debian's archive keys pinned, the test key signing): apt refuses
		// it, naming the key.
		foreign, fprs := foreignMirror(t, l.LabDir(), repo)
		res, err = h2.try(t)(cudaRepo(foreign, manifests.SigningKey{File: cudaKeyFile, Fingerprints: fprs}))
		if want := "NO_PUBKEY " + repo.KeyFingerprint[24:]; err == nil || !strings.Contains(string(res.Stdout)+string(res.Stderr), want) {
			t.Errorf("indexes signed by a key not pinned: %v, want apt's refusal with %q:\n%s\n%s", err, want, lab.Tail(res.Stdout), lab.Tail(res.Stderr))
		}
		// A keyring already there is checked: lab-3's holds Debian's keys.
		h3.sh(t, "cp /usr/share/keyrings/debian-archive-keyring.gpg /usr/share/keyrings/cuda-archive-keyring.gpg")
		parallel(t, hosts, func(t *testing.T, h *simHost) {
			h.must(t)(scripts.NVIDIARepo(scripts.NVIDIARepoParams{Family: deb12, Source: "cuda-repo", Arch: "x86_64",
				RepoURL: repo.CUDA, Components: []string{"contrib"}, Key: testKey(repo, manifests.RepoCUDA)}))
		})
		if out, _ := h3.sh(t, "cmp /usr/share/keyrings/cuda-archive-keyring.gpg /usr/share/keyrings/debian-archive-keyring.gpg"); !strings.Contains(out, "differ") {
			t.Errorf("lab-3's planted keyring was kept: %s", out)
		}
		for _, h := range hosts { // converged: nothing to change
			if out := h.must(t)(cudaRepo(repo.CUDA, testKey(repo, manifests.RepoCUDA))); strings.Contains(out, "changed") {
				t.Errorf("%s, second run: %s", h.name, out)
			}
		}
		out, _ := h1.sh(t, "cat /etc/apt/sources.list.d/cuda-debian12-x86_64.list; apt-cache policy nvidia-open")
		if !strings.Contains(out, "deb [signed-by=/usr/share/keyrings/cuda-archive-keyring.gpg] "+repo.CUDA+" /") ||
			!strings.Contains(out, "Candidate: 590.48.01-1") || !strings.Contains(out, "580.95.05-1 600") {
			t.Errorf("lab-1 sources and policy:\n%s", out)
		}
		inv, err := repo.Inventory(l, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		if loaded, err := inventory.Load(inv); err != nil || loaded.Cluster.Spec.Mirrors.NVIDIA != repo.URL {
			t.Errorf("inventory with the stand-in mirror: %v", err)
		}
		// NVIDIA's metapackages pin their dependencies to one version; apt
		// takes candidate versions for dependencies, so the metapackage alone
		// at an older version cannot be installed.
		if out, code := h1.sh(t, "apt-get install -s -y nvidia-open=580.95.05-1"); code == 0 || !strings.Contains(out, "but 590.48.01-1 is to be installed") {
			t.Errorf("apt-get install nvidia-open=580.95.05-1 alone: exit %d\n%s", code, out)
		}
	})

	t.Run("failed install", func(t *testing.T) {
		h3.sh(t, "touch "+hoststate.FailInstallFile)
		res, err := h3.try(t)(driver("580.95.05", "proprietary"))
		if err == nil || !strings.Contains(string(res.Stdout)+string(res.Stderr), "this failure is simulated") {
			t.Fatalf("install with %s: %v\n%s%s", hoststate.FailInstallFile, err, res.Stdout, res.Stderr)
		}
		if out, _ := h3.sh(t, "dpkg-query -W -f='${db:Status-Status}' nvidia-kernel-dkms; test -e "+hoststate.InstalledDriverFile+" && echo recorded"); out != "half-configured" {
			t.Errorf("after the failed postinst: %q", out)
		}
		h3.sh(t, "rm "+hoststate.FailInstallFile)
		h3.must(t)(driver("580.95.05", "proprietary"))
		if out, _ := h3.sh(t, "cat "+hoststate.InstalledDriverFile); out != "580.95.05 proprietary" {
			t.Errorf("installed driver %q after the re-run", out)
		}
	})

	t.Run("install and hold", func(t *testing.T) {
		parallel(t, []*simHost{h1, h2}, func(t *testing.T, h *simHost) {
			release := map[string]string{"lab-1": "580.95.05", "lab-2": "590.48.01"}[h.name]
			h.must(t)(driver(release, "open"))
		})
		s := h1.state(t)
		for _, name := range DriverPackages("580.95.05", "open") {
			if p := s.Packages[name]; p.Version != "580.95.05-1" || !p.Held {
				t.Errorf("lab-1 %s: %+v, want 580.95.05-1 held", name, p)
			}
		}
		if !s.UnattendedBlacklist || s.InstalledDriver() != "580.95.05" || s.NeedsReboot() == "" {
			t.Errorf("lab-1: unattended blacklist %v, installed %q, needs reboot %q", s.UnattendedBlacklist, s.InstalledDriver(), s.NeedsReboot())
		}
		// gpukit pins the release (priority 1001) and holds it: the newer
		// release in the repository is not even a candidate.
		out, _ := h1.sh(t, "apt-get -s upgrade; apt-get -s dist-upgrade | grep -c '^Inst ' || true")
		if strings.Contains(out, "Inst nvidia") || strings.Contains(out, "Inst lib") || !strings.HasSuffix(out, "\n0") {
			t.Errorf("lab-1: an upgrade would move held packages:\n%s", out)
		}
		if out, code := h1.sh(t, "nvidia-smi"); code != 9 || !strings.Contains(out, "couldn't communicate with the NVIDIA driver") {
			t.Errorf("lab-1 nvidia-smi before a boot: exit %d: %s", code, out)
		}
	})

	t.Run("boot loads the installed driver", func(t *testing.T) {
		parallel(t, []*simHost{h1, h3}, func(t *testing.T, h *simHost) { h.reboot(t) })
		s := h1.state(t)
		if s.ModuleLoaded != "580.95.05" || s.NeedsReboot() != "" || len(s.SMI) != 1 || s.SMI[0].Driver != "580.95.05" {
			t.Fatalf("lab-1 after the boot: module %q, needs reboot %q, GPUs %+v", s.ModuleLoaded, s.NeedsReboot(), s.SMI)
		}
		// the default unit runs the daemon with --no-persistence-mode
		if s.SMI[0].Persistence != "Disabled" {
			t.Errorf("persistence %q before gpukit's drop-in", s.SMI[0].Persistence)
		}
		f := h1.facts(t)
		if len(f.GPUs) != 1 || f.GPUs[0].Name != "NVIDIA H100 80GB HBM3" || f.GPUs[0].Driver != "580.95.05" || f.LoadedDriver != "580.95.05" {
			t.Errorf("lab-1 facts: GPUs %+v, loaded %q", f.GPUs, f.LoadedDriver)
		}
		out, _ := h1.sh(t, "nvidia-smi; nvidia-smi -q | head -8; nvidia-smi -L")
		for _, want := range []string{"Driver Version: 580.95.05      CUDA Version: 13.0", "Driver Version                                         : 580.95.05",
			"GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-"} {
			if !strings.Contains(out, want) {
				t.Errorf("lab-1 nvidia-smi lacks %q:\n%s", want, out)
			}
		}
		if s := h3.state(t); s.ModuleLoaded != "580.95.05" || len(s.SMI) != 1 {
			t.Errorf("lab-3 (proprietary) after the boot: module %q, GPUs %+v, smi error %q", s.ModuleLoaded, s.SMI, s.SMIError)
		}
	})

	t.Run("persistence mode", func(t *testing.T) {
		h1.must(t)(scripts.Persistenced(scripts.PersistencedParams{Family: deb12}))
		if s := h1.state(t); len(s.SMI) != 1 || s.SMI[0].Persistence != "Enabled" || !s.PersistencedDropIn || s.Services["nvidia-persistenced"].Active != "active" {
			t.Fatalf("after gpukit's persistenced phase: %+v, drop-in %v, service %+v", s.SMI, s.PersistencedDropIn, s.Services["nvidia-persistenced"])
		}
		h1.sh(t, "systemctl stop nvidia-persistenced")
		if s := h1.state(t); s.SMI[0].Persistence != "Disabled" {
			t.Errorf("persistence %q with the daemon stopped", s.SMI[0].Persistence)
		}
		h1.reboot(t) // enabled: it comes back at boot, in persistence mode
		if s := h1.state(t); s.SMI[0].Persistence != "Enabled" {
			t.Errorf("persistence %q after a boot", s.SMI[0].Persistence)
		}
	})

	t.Run("fabric manager, CUDA, container toolkit", func(t *testing.T) {
		h1.must(t)(scripts.FabricManager(scripts.FabricManagerParams{Family: deb12, Package: "nvidia-fabricmanager", Version: "580.95.05"}))
		s := h1.state(t)
		if fm := s.Services["nvidia-fabricmanager"]; fm.Enabled != "enabled" || fm.Active != "active" || !s.Packages["nvidia-fabricmanager"].Held || s.NVSwitchDriver != 4 {
			t.Errorf("fabric manager: %+v, package %+v, NVSwitches the driver sees %d", fm, s.Packages["nvidia-fabricmanager"], s.NVSwitchDriver)
		}
		out := h1.must(t)(scripts.CUDAToolkit(scripts.CUDAToolkitParams{Family: deb12, CUDA: CUDAToolkit}))
		if !strings.Contains(out, "Cuda compilation tools, release 13.0") {
			t.Errorf("CUDA toolkit: %s", out)
		}
		h1.sh(t, `mkdir -p /etc/docker && echo '{"log-level": "warn"}' >/etc/docker/daemon.json`)
		out = h1.must(t)(scripts.ContainerToolkit(scripts.ContainerToolkitParams{Family: deb12, RepoURL: repo.ContainerToolkit,
			Version: "1.20.0", DebArch: "amd64", Key: testKey(repo, manifests.RepoContainerToolkit)}))
		if !strings.Contains(out, "NVIDIA Container Toolkit CLI version 1.20.0") {
			t.Errorf("container toolkit: %s", out)
		}
		out, _ = h1.sh(t, "apt-cache policy nvidia-container-toolkit | grep -E 'Installed|Candidate'; nvidia-ctk runtime configure --runtime=docker --set-as-default 2>/dev/null; cat /etc/docker/daemon.json")
		if !strings.Contains(out, "Installed: 1.20.0-1") || !strings.Contains(out, `"log-level": "warn"`) || !strings.Contains(out, `"default-runtime": "nvidia"`) {
			t.Errorf("toolkit and docker configuration:\n%s", out)
		}
	})

	t.Run("nouveau until blacklisted, then downgrade", func(t *testing.T) {
		h2.reboot(t) // 590 installed, nouveau not blacklisted: nouveau takes the GPU
		if s := h2.state(t); !s.NouveauLoaded || s.ModuleLoaded != "" || !strings.Contains(s.SMIError, "couldn't communicate") {
			t.Fatalf("lab-2 with nouveau: nouveau %v, module %q, smi %q", s.NouveauLoaded, s.ModuleLoaded, s.SMIError)
		}
		// what gpukit's nvidia/prepare writes (its headers and DKMS steps need the Debian mirror)
		h2.sh(t, "printf 'blacklist nouveau\\noptions nouveau modeset=0\\n' >/etc/modprobe.d/blacklist-nouveau.conf")
		h2.reboot(t)
		s := h2.state(t)
		if s.NouveauLoaded || s.ModuleLoaded != "590.48.01" || len(s.SMI) != 1 || s.SMI[0].Driver != "590.48.01" {
			t.Fatalf("lab-2 blacklisted: nouveau %v, module %q, GPUs %+v (%s)", s.NouveauLoaded, s.ModuleLoaded, s.SMI, s.SMIError)
		}
		out, _ := h2.sh(t, "nvidia-smi | sed -n 3p")
		if !strings.Contains(out, "NVIDIA-SMI 590.48.01") || !strings.Contains(out, "CUDA Version: 13.1") {
			t.Errorf("lab-2 table header %q: the capture (595.80) with the loaded driver", out)
		}
		h2.must(t)(driver("580.95.05", "open")) // a downgrade: the module in memory stays 590
		s = h2.state(t)
		if !strings.Contains(s.SMIError, "Driver/library version mismatch") || !strings.Contains(s.SMIError, "NVML library version: 580.95") || s.NeedsReboot() == "" {
			t.Errorf("lab-2 after the downgrade: smi %q, needs reboot %q", s.SMIError, s.NeedsReboot())
		}
		if out, code := h2.sh(t, "nvidia-smi -L"); code != 18 {
			t.Errorf("nvidia-smi exit %d: %s", code, out)
		}
		h2.reboot(t)
		if s := h2.state(t); len(s.SMI) != 1 || s.SMI[0].Driver != "580.95.05" || s.NeedsReboot() != "" {
			t.Errorf("lab-2 after the boot: GPUs %+v, smi %q, needs reboot %q", s.SMI, s.SMIError, s.NeedsReboot())
		}
	})

	t.Run("removal", func(t *testing.T) {
		// Held packages first need unholding; and removing only the module
		// package would make apt satisfy nvidia-driver's "open | proprietary"
		// dependency with the newest open module instead: the driver goes too.
		out, code := h3.sh(t, "apt-mark unhold $(apt-mark showhold) >/dev/null && "+
			"log=$(apt-get remove -y -q cuda-drivers cuda-drivers-580 nvidia-driver nvidia-kernel-dkms 2>&1) || { echo \"$log\"; exit 1; }; "+
			"test -e "+hoststate.InstalledDriverFile+" && echo still-recorded; "+
			"dpkg-query -W -f='${db:Status-Status}\\n' nvidia-kernel-dkms nvidia-kernel-open-dkms 2>/dev/null | grep -x installed && echo module-still-installed; cat "+hoststate.LoadedDriverFile)
		if code != 0 || out != "580.95.05" {
			t.Errorf("after removing the driver (still loaded until the next boot): exit %d: %q", code, out)
		}
		h3.reboot(t)
		if s := h3.state(t); s.ModuleLoaded != "" || !strings.Contains(s.SMIError, "couldn't communicate") {
			t.Errorf("lab-3 after the boot: module %q, smi %q", s.ModuleLoaded, s.SMIError)
		}
	})
}

// testKey is the key a host trusts for one of the stand-in repositories:
// the bill of materials' file, the test key's fingerprint.
func testKey(r Repo, repo string) manifests.SigningKey {
	m := inventory.Mirrors{NVIDIA: r.URL, SigningKeys: inventory.MirrorKeys{NVIDIA: []string{r.KeyFingerprint}}}
	return m.SigningKey(repo, "apt")
}

// foreignMirror copies the CUDA stand-in repository (hard links) to a mirror
// of its own in the lab's web root whose key file holds Debian's archive
// keys instead of the key that signed it; it returns the mirror's URL and
// those keys' fingerprints.
func foreignMirror(t *testing.T, labDir string, r Repo) (string, []string) {
	t.Helper()
	name := fmt.Sprintf("gpusim-foreign-%d", os.Getpid())
	src := filepath.Join(r.Dir, "cuda", "repos", "debian12", "x86_64")
	dst := filepath.Join(labDir, "repo", "www", name)
	os.RemoveAll(dst)
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dst) })
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Type().IsRegular() && e.Name() != cudaKeyFile {
			if err := os.Link(filepath.Join(src, e.Name()), filepath.Join(dst, e.Name())); err != nil {
				t.Fatal(err)
			}
		}
	}
	const debian = "/usr/share/keyrings/debian-archive-keyring.gpg"
	b, err := os.ReadFile(debian)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dst, cudaKeyFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("gpg", "--batch", "--with-colons", "--show-keys", debian).Output()
	if err != nil {
		t.Fatal(err)
	}
	fprs := aptrepo.PrimaryFingerprints(out)
	if len(fprs) == 0 {
		t.Fatalf("no keys in %s", debian)
	}
	u, err := url.Parse(r.URL)
	if err != nil {
		t.Fatal(err)
	}
	return u.Scheme + "://" + u.Host + "/" + name + "/", fprs
}
