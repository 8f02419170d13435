// Package scriptsim is the GPU SIMULATOR of gpukit's unit tests: a fleet of
// Debian 12 hosts, with NVIDIA GPUs or without, as gpukit's host scripts
// see them. It is test tooling only, imported by _test.go files and never
// shipped in the gpukit binary; the lab's simulator (test/gpusim) does the
// same at the host level, with real packages, files and reboots.
//
// Sim answers each script by its command name (ssh.Command.Name) through
// pkg/engine/enginetest's recording executor, and changes the simulated
// host the way the real script changes a real one: prepare blacklists
// nouveau, the driver's install installs and holds its packages and leaves
// a reboot marker, a reboot refuses dials for a while and loads the module
// on disk, the GPU consumers stop, persistence mode follows its daemon.
// Values are read from the rendered scripts (the driver's version and
// packages, the toolkit's version, nvidia-smi's --query-gpu fields), never
// assumed.
//
// The GPUs are real captures (test/testdata/nvidia-smi, read with
// test/gpusim/capture): nvidia-smi's rows, its -q -x or -q report and the
// PCI bus replay a capture with the driver the host has loaded and its
// persistence mode, and a host with more GPUs than the capture has copies
// of the recorded one (each with its own index, bus id and UUID). A capture
// may be one -q -x (or -q) report alone: the rows are derived from it. The
// driver drives only the GPUs its branch supports (pkg/compat, through
// capture.Driven): nvidia-smi does not list the others, the PCI bus still
// shows them, and a module that drives none does not load.
//
// Failures to inject are Host fields: a driver install that fails, reboots
// that take many dials, uncorrectable ECC errors, nvidia-smi that stops
// answering after a reboot, processes computing on the GPUs, Secure Boot,
// CPU-only hosts.
package scriptsim

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/gpukit/gpukit/pkg/engine/enginetest"
	"github.com/gpukit/gpukit/pkg/ssh"
	"github.com/gpukit/gpukit/test/fixtures"
)

// Sim is a fleet of simulated hosts. Each host's state is kept as JSON,
// in memory or, for a fleet shared with another process (a gpukit killed
// and resumed), as a file per host in a directory.
type Sim struct {
	dir string
	mu  sync.Mutex
	mem map[string][]byte
}

// New is a fleet of hosts, kept in dir ("": in memory), each as its last
// boot left it: a driver module that drives none of the host's GPUs (a
// generation its branch dropped) is not loaded.
func New(dir string, hosts map[string]Host) (*Sim, error) {
	s := &Sim{dir: dir, mem: map[string][]byte{}}
	for name, h := range hosts {
		h.settle()
		if err := s.save(name, &h); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Open is the fleet a New in another process keeps in dir.
func Open(dir string) *Sim { return &Sim{dir: dir, mem: map[string][]byte{}} }

func (s *Sim) load(name string) (*Host, error) {
	b, ok := s.mem[name]
	if s.dir != "" {
		var err error
		if b, err = os.ReadFile(filepath.Join(s.dir, name+".json")); err != nil {
			return nil, err
		}
	} else if !ok {
		return nil, fmt.Errorf("scriptsim: no host %s", name)
	}
	h := &Host{}
	return h, json.Unmarshal(b, h)
}

func (s *Sim) save(name string, h *Host) error {
	b, err := json.Marshal(h)
	switch {
	case err != nil:
		return err
	case s.dir == "":
		s.mem[name] = b
		return nil
	}
	tmp := filepath.Join(s.dir, "."+name+".json")
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(s.dir, name+".json"))
}

// Update changes a host's state.
func (s *Sim) Update(name string, f func(h *Host)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	h, err := s.load(name)
	if err != nil {
		return err
	}
	f(h)
	return s.save(name, h)
}

// Host is a copy of a host's state; it panics on a host the fleet lacks.
func (s *Sim) Host(name string) Host {
	s.mu.Lock()
	defer s.mu.Unlock()
	h, err := s.load(name)
	if err != nil {
		panic(err)
	}
	return *h
}

// Fleet is the recording executor over the simulated hosts.
func (s *Sim) Fleet() *enginetest.Fleet {
	return &enginetest.Fleet{Handler: s.Handle, BeforeDial: s.Dial}
}

// Dial is a dial of host (enginetest.Fleet's BeforeDial): while the host
// reboots each is refused but the last, which finds it booted.
func (s *Sim) Dial(_ context.Context, host string) error {
	var refused error
	err := s.Update(host, func(h *Host) {
		if h.Rebooting == 0 {
			return
		}
		if h.Rebooting--; h.Rebooting > 0 {
			refused = errors.New("dial tcp: connect: connection refused")
			return
		}
		h.boot()
	})
	return errors.Join(refused, err)
}

// Handle answers cmd on the host e stands for (an enginetest.Handler).
func (s *Sim) Handle(_ context.Context, e *enginetest.Executor, cmd ssh.Command) (ssh.Result, error) {
	var res ssh.Result
	var rerr error
	if err := s.Update(e.Host, func(h *Host) { res, rerr = h.Run(e.Host, cmd) }); err != nil {
		return ssh.Result{}, err
	}
	return res, rerr
}

// Run answers cmd on h, a host called name, and changes h as the script
// changes the host; the other kits (test/swarmsim) answer a host's NVIDIA
// scripts and facts with it.
func (h *Host) Run(name string, cmd ssh.Command) (ssh.Result, error) {
	if !reads[cmd.Name] {
		h.Writes = append(h.Writes, cmd.Name)
	}
	out, code, stderr := h.answer(name, cmd)
	res := ssh.Result{Stdout: []byte(out), Stderr: []byte(stderr), ExitCode: code}
	if code != 0 {
		return res, &ssh.ExitError{Command: cmd.Name, Code: code, StderrTail: stderr}
	}
	return res, nil
}

// reads are the scripts that change nothing (the others are Host.Writes).
var reads = map[string]bool{"probe facts": true, "nvidia state": true, "nvidia health": true, "wait for the boot to finish": true,
	"dcgm diagnostics": true, "nccl bandwidth": true}

// Values the scripts carry, as rendered.
var (
	scriptWant     = regexp.MustCompile(`(?m)^want='?([0-9.]+)'?$`)
	scriptPkgs     = regexp.MustCompile(`(?m)^pkgs=\(([^)]*)\)$`)
	scriptTKv      = regexp.MustCompile(`(?m)^v='?([0-9.]+)'?-1$`)
	scriptQueryGPU = regexp.MustCompile(`--query-gpu='?([A-Za-z0-9_.,]+)'?`)
)

// answer is the script cmd on host name: what it prints, its exit code and
// its stderr.
func (h *Host) answer(name string, cmd ssh.Command) (out string, code int, stderr string) {
	if h.Packages == nil {
		h.Packages = map[string]string{}
	}
	if h.Held == nil {
		h.Held = map[string]bool{}
	}
	switch cmd.Name {
	case "probe facts":
		return h.probe(name, cmd.Script)
	case "nvidia state":
		return h.nvidiaState(cmd.Script)
	case "prepare for the driver":
		return h.prepare(), 0, ""
	case "set up the driver's package source":
		return "", 0, ""
	case "install the driver":
		return h.installDriver(cmd.Script)
	case "enable persistence mode":
		h.Packages["nvidia-persistenced"] = h.Driver + "-1"
		h.Held["nvidia-persistenced"] = true
		h.PersistencedDropIn, h.PersistencedEnabled = true, true
		h.PersistencedActive = h.Loaded != ""
		return "", 0, ""
	case "install the container toolkit":
		v := scriptTKv.FindStringSubmatch(cmd.Script)
		if v == nil {
			return "", 2, "scriptsim: no toolkit version in the script"
		}
		h.install(v[1]+"-1", ContainerToolkit...)
		return "", 0, ""
	case "stop the GPU consumers":
		if fail, _ := h.smi(); h.ComputeApps != "" && fail == "" && strings.Contains(cmd.Script, "query-compute-apps") {
			return "", 3, "gpukit: processes are computing on the GPUs (pid, name, memory):\n" + h.ComputeApps + "\ngpukit: stop them, or let the upgrade end them (--force)"
		}
		if h.PersistencedActive {
			h.PersistencedActive = false
			return "gpukit: stopped nvidia-persistenced\n", 0, ""
		}
		return "", 0, ""
	case "reboot":
		h.Rebooting = max(1, h.RebootDials) + 1
		return fmt.Sprintf("gpukit: rebooting in 2 s (boot id %s)\n", h.bootID()), 0, ""
	case "swap the driver's kernel modules":
		return h.swapModules()
	case "wait for the boot to finish":
		return "system running\n", 0, ""
	case "nvidia health":
		return h.health()
	case "etcd snapshot":
		// as etcd-snapshot.sh prints it: its size, then its sha256
		return "gpukit: etcd snapshot (1024 bytes)\nsha256=" + strings.Repeat("5e", 32) + "\n", 0, ""
	case "partition the GPUs (MIG)", "remove the MIG boot unit":
		return h.migInstall(cmd.Script)
	case "dcgm diagnostics":
		return h.replayTest("dcgm-diag", h.DCGMDiag, "no dcgmi on the host (NVIDIA's datacenter-gpu-manager package)")
	case "nccl bandwidth":
		return h.replayTest("nccl-tests", h.NCCL, "no nccl-tests on the host (all_reduce_perf)")
	}
	return "", 127, fmt.Sprintf("scriptsim: %s has no answer to %q", name, cmd.Name)
}

func (h *Host) prepare() string {
	h.Headers, h.NouveauBlacklisted = true, true
	if _, ok := h.Packages["dkms"]; !ok {
		h.Packages["dkms"] = "3.0.10-8"
	}
	if h.NouveauLoaded {
		h.RebootRequired = true
		h.RebootWhy = append(h.RebootWhy, "nouveau")
		return "gpukit: nouveau is loaded; the host reboots after the driver is installed\n"
	}
	return ""
}

// installDriver is nvidia-driver.sh (apt): the packages at the wanted
// release, with those held at the release installed before, all held; the
// module loaded at once where nothing is in memory, else a reboot marker.
func (h *Host) installDriver(script string) (string, int, string) {
	if h.InstallFails != "" {
		return "", 100, h.InstallFails
	}
	want, pkgs := scriptWant.FindStringSubmatch(script), scriptPkgs.FindStringSubmatch(script)
	if want == nil || pkgs == nil {
		return "", 2, "scriptsim: cannot read the driver script"
	}
	if !strings.Contains(want[1], ".") {
		return "", 3, "scriptsim: driver branch " + want[1] + ": the simulated repository has no branches, name a release"
	}
	release := want[1]
	names := strings.Fields(strings.ReplaceAll(pkgs[1], "'", ""))
	for name, v := range h.Packages {
		if h.Held[name] && h.Driver != "" && upstream(v) == h.Driver {
			names = append(names, name) // follows the driver
		}
	}
	slices.Sort(names)
	names = slices.Compact(names)
	h.install(release+"-1", names...)
	h.Driver, h.UnattendedBlacklist = release, true
	if h.Loaded == "" && !h.NouveauLoaded && !h.SecureBoot && h.drives(release) {
		h.Loaded = release // modprobe nvidia
	}
	out := fmt.Sprintf("gpukit: held %d packages of driver %s\n", len(names), release)
	if h.Loaded != release {
		h.RebootRequired = true
		h.RebootWhy = append(h.RebootWhy, fmt.Sprintf("driver %s loaded, %s installed", cmp.Or(h.Loaded, "none"), release))
		out += fmt.Sprintf("gpukit: driver %s loaded, %s installed: the host reboots\n", cmp.Or(h.Loaded, "none"), release)
	}
	return out, 0, ""
}

// install installs and holds packages at version.
func (h *Host) install(version string, names ...string) {
	for _, n := range names {
		h.Packages[n] = version
		h.Held[n] = true
	}
}

// boot is what a reboot leaves: the marker gone, nouveau loaded unless
// blacklisted, else the module on disk (unsigned: not under Secure Boot;
// not without a GPU it drives), the persistence daemon started if enabled.
func (h *Host) boot() {
	h.Boot++
	h.RebootRequired, h.RebootWhy = false, nil
	h.NouveauLoaded = h.GPUs > 0 && !h.NouveauBlacklisted
	h.Loaded = ""
	if h.Driver != "" && !h.NouveauLoaded && !h.SecureBoot && h.drives(h.Driver) {
		h.Loaded = h.Driver
	}
	h.PersistencedActive = h.PersistencedEnabled && h.Loaded != ""
	if h.BreakAtBoot {
		h.SMIBroken = true
	}
	h.migBoot()
}

// swapModules is nvidia-module-swap.sh: the old modules unloaded and the
// driver on disk loaded, unless something holds them (exit 3, the reason
// after "gpukit: not swapped: "). A module loaded afresh has no MIG
// instances, as after a boot.
func (h *Host) swapModules() (string, int, string) {
	refuse := func(why string) (string, int, string) { return "", 3, "gpukit: not swapped: " + why }
	switch {
	case !h.RuntimeModules:
		h.PersistencedActive = false // stopped before the modules were tried; the boot starts it
		return refuse("modprobe -r nvidia: modprobe: FATAL: Module nvidia is in use. (scriptsim: this host's modules change only at a boot)")
	case h.NouveauLoaded:
		return refuse("nouveau is loaded and holds the GPUs")
	case h.ComputeApps != "" && h.Loaded != "":
		return refuse("processes compute on the GPUs: " + strings.ReplaceAll(strings.TrimSpace(h.ComputeApps), "\n", ";"))
	}
	before := h.Loaded
	h.PersistencedActive, h.Loaded = false, ""
	out := fmt.Sprintf("gpukit: unloaded nvidia (driver %s)\n", cmp.Or(before, "none"))
	if h.SecureBoot || !h.drives(h.Driver) {
		return out, 3, "gpukit: not swapped: modprobe nvidia: modprobe: ERROR: could not insert 'nvidia': No such device"
	}
	h.Loaded = h.Driver
	h.PersistencedActive = h.PersistencedEnabled
	var why []string
	for _, w := range h.RebootWhy {
		if !strings.HasPrefix(w, "driver ") {
			why = append(why, w)
		}
	}
	h.RebootWhy, h.RebootRequired = why, len(why) > 0
	for _, g := range h.MIG.GPUs {
		g.Mode, g.Instances = g.Pending, nil
	}
	if h.MIG.Unit && !h.SMIBroken {
		h.migRun(h.MIG.Script)
	}
	return out + fmt.Sprintf("gpukit: driver %s loaded without a reboot (was %s)\n", h.Loaded, cmp.Or(before, "none")), 0, ""
}

// upstream is a package version without its revision.
func upstream(v string) string {
	if i := strings.LastIndexByte(v, '-'); i >= 0 {
		return v[:i]
	}
	return v
}

// replayTest answers an acceptance test with the real output the host was
// given (a file of test/testdata/DIR), or the script's "not run" line.
func (h *Host) replayTest(dir, file, missing string) (string, int, string) {
	if fail, code := h.smi(); fail != "" {
		return "", code, fail
	}
	if file == "" {
		return "gpukit: not run: " + missing + "\n", 0, ""
	}
	root, why := fixtures.Find(dir)
	if root == "" {
		return "", 2, "scriptsim: the " + dir + " captures: " + why
	}
	b, err := os.ReadFile(filepath.Join(root, file))
	if err != nil {
		return "", 2, err.Error()
	}
	return string(b), 0, ""
}
