package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpukit/gpukit/test/fixtures"
	"github.com/gpukit/gpukit/test/gpusim/hoststate"
)

// fakeHost is a simulated host's files below a temporary root.
type fakeHost struct {
	t    *testing.T
	root string
}

func newHost(t *testing.T, capture string) fakeHost {
	t.Helper()
	h := fakeHost{t: t, root: t.TempDir()}
	files, err := filepath.Glob(filepath.Join(fixtures.Dir(t, "nvidia-smi"), capture+"__*"))
	if err != nil || len(files) == 0 {
		t.Fatalf("capture %s: %v", capture, err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		h.write("/usr/share/gpusim/captures/"+filepath.Base(f), string(b))
	}
	h.write(hoststate.CaptureFile, "/usr/share/gpusim/captures/"+capture+"\n")
	h.write(hoststate.HardwareFile, "nvswitches=0\nnouveau=no\n")
	return h
}

func (h fakeHost) write(p, content string) {
	h.t.Helper()
	full := filepath.Join(h.root, p)
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		h.t.Fatal(err)
	}
	if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
		h.t.Fatal(err)
	}
}

// library installs the stand-in NVML library of version v.
func (h fakeHost) library(v string) {
	dir := filepath.Join(h.root, "usr/lib/x86_64-linux-gnu/nvidia/current")
	h.write("usr/lib/x86_64-linux-gnu/nvidia/current/libnvidia-ml.so."+v, "stand-in")
	os.Remove(filepath.Join(dir, "libnvidia-ml.so.1"))
	if err := os.Symlink("libnvidia-ml.so."+v, filepath.Join(dir, "libnvidia-ml.so.1")); err != nil {
		h.t.Fatal(err)
	}
}

func (h fakeHost) loaded(v, flavor string) {
	h.write(hoststate.LoadedDriverFile, v+"\n")
	h.write(hoststate.LoadedFlavorFile, flavor+"\n")
}

// persistenced records a daemon with this command line as running.
func (h fakeHost) persistenced(args ...string) {
	const pid = 4242
	h.write(hoststate.PersistencedPIDFile, strconv.Itoa(pid)+"\n")
	h.write("/proc/"+strconv.Itoa(pid)+"/cmdline", strings.Join(append([]string{"/usr/bin/nvidia-persistenced"}, args...), "\x00")+"\x00")
}

func (h fakeHost) smi(args ...string) (int, string) {
	var out, errb bytes.Buffer
	code := run(hoststate.Host{Root: h.root}, args, &out, &errb)
	return code, out.String() + errb.String()
}

var probeFields = "--query-gpu=index,uuid,name,memory.total,driver_version,mig.mode.current"
var stateFields = "--query-gpu=index,uuid,driver_version,persistence_mode"

func TestDriverStates(t *testing.T) {
	const capture = "h100-80gb-hbm3__drv590.48.01"
	t.Run("no library", func(t *testing.T) {
		h := newHost(t, capture)
		code, out := h.smi()
		if code != 12 || !strings.Contains(out, "couldn't find libnvidia-ml.so") {
			t.Fatalf("exit %d: %s", code, out)
		}
	})
	t.Run("installed, nothing loaded", func(t *testing.T) {
		h := newHost(t, capture)
		h.library("580.95.05")
		code, out := h.smi(stateFields, "--format=csv,noheader,nounits")
		if code != 9 || !strings.HasPrefix(out, "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.") {
			t.Fatalf("exit %d: %s", code, out)
		}
	})
	t.Run("loaded differs from installed", func(t *testing.T) {
		h := newHost(t, capture)
		h.library("590.48.01")
		h.loaded("580.95.05", "open")
		code, out := h.smi(probeFields, "--format=csv,noheader,nounits")
		if code != 18 || out != "Failed to initialize NVML: Driver/library version mismatch\nNVML library version: 590.48\n" {
			t.Fatalf("exit %d: %q", code, out)
		}
	})
	t.Run("loaded, no persistence daemon", func(t *testing.T) {
		h := newHost(t, capture)
		h.library("580.95.05")
		h.loaded("580.95.05", "open")
		code, out := h.smi(stateFields, "--format=csv,noheader,nounits")
		if code != 0 || out != "0, GPU-00000000-0000-0000-0000-000000000000, 580.95.05, Disabled\n" {
			t.Fatalf("exit %d: %q", code, out)
		}
		_, out = h.smi(probeFields, "--format=csv,noheader,nounits")
		if out != "0, GPU-00000000-0000-0000-0000-000000000000, NVIDIA H100 80GB HBM3, 81559, 580.95.05, Disabled\n" {
			t.Fatalf("probe row %q", out)
		}
		_, table := h.smi()
		if !strings.Contains(table, "| NVIDIA-SMI 580.95.05              Driver Version: 580.95.05      CUDA Version: 13.0     |") ||
			!strings.Contains(table, "NVIDIA H100 80GB HBM3          Off |") || strings.Contains(table, "590.48") {
			t.Fatalf("table:\n%s", table)
		}
		_, q := h.smi("-q")
		for _, want := range []string{"Driver Version                                         : 580.95.05\n",
			"CUDA Version                                           : 13.0\n", "Persistence Mode                                   : Disabled\n"} {
			if !strings.Contains(q, want) {
				t.Errorf("-q lacks %q", want)
			}
		}
		if _, l := h.smi("-L"); l != "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-00000000-0000-0000-0000-000000000000)\n" {
			t.Errorf("-L: %q", l)
		}
	})
	t.Run("persistence daemon", func(t *testing.T) {
		h := newHost(t, capture)
		h.library("580.95.05")
		h.loaded("580.95.05", "open")
		for _, c := range []struct {
			args []string
			want string
		}{
			{[]string{"--user", "root", "--persistence-mode", "--verbose"}, "Enabled"},
			{[]string{"--user", "nvidia-persistenced", "--no-persistence-mode", "--verbose"}, "Disabled"},
			{nil, "Enabled"}, // the real daemon's default
		} {
			h.persistenced(c.args...)
			_, out := h.smi(stateFields, "--format=csv,noheader")
			if !strings.HasSuffix(out, ", "+c.want+"\n") {
				t.Errorf("daemon %v: %q, want persistence %s", c.args, out, c.want)
			}
		}
		h.write(hoststate.PersistencedPIDFile, "999999\n") // gone
		if _, out := h.smi(stateFields, "--format=csv,noheader"); !strings.HasSuffix(out, ", Disabled\n") {
			t.Errorf("dead daemon: %q", out)
		}
	})
}

// The hardware simulation's switches for the upgrade's tests: a GPU lost
// (nvidia-smi cannot reach it, whatever is loaded) and processes computing
// on the GPUs (--query-compute-apps).
func TestLostGPUAndComputeApps(t *testing.T) {
	h := newHost(t, "h100-80gb-hbm3__drv590.48.01")
	h.library("580.95.05")
	h.loaded("580.95.05", "open")
	apps := "--query-compute-apps=pid,process_name,used_memory"
	if code, out := h.smi(apps, "--format=csv,noheader"); code != 0 || out != "" {
		t.Errorf("no process: exit %d %q", code, out)
	}
	h.write(hoststate.ComputeAppsFile, "4242, python, 1024 MiB\n")
	if code, out := h.smi(apps, "--format=csv,noheader"); code != 0 || out != "4242, python, 1024 MiB\n" {
		t.Errorf("a training process: exit %d %q", code, out)
	}
	h.write(hoststate.GPULostFile, "")
	for _, args := range [][]string{{"-q", "-x"}, {stateFields, "--format=csv,noheader"}, {apps, "--format=csv,noheader"}} {
		if code, out := h.smi(args...); code != 15 || !strings.HasPrefix(out, "Unable to determine the device handle for GPU00000000:") {
			t.Errorf("%v with the GPU lost: exit %d %q", args, code, out)
		}
	}
}

func TestOpenModulesDoNotDrivePreTuring(t *testing.T) {
	h := newHost(t, "h100-80gb-hbm3__drv590.48.01")
	// the same capture, with a Volta device id
	b, err := os.ReadFile(filepath.Join(h.root, "usr/share/gpusim/captures/h100-80gb-hbm3__drv590.48.01__query-gpu-idle.csv"))
	if err != nil {
		t.Fatal(err)
	}
	h.write("usr/share/gpusim/captures/h100-80gb-hbm3__drv590.48.01__query-gpu-idle.csv", strings.ReplaceAll(string(b), "0x233010DE", "0x1DB510DE"))
	h.library("580.95.05")
	h.loaded("580.95.05", "open")
	if code, out := h.smi(); code != 6 || out != "No devices were found\n" {
		t.Fatalf("exit %d: %q", code, out)
	}
	h.loaded("580.95.05", "proprietary")
	if code, out := h.smi("-L"); code != 0 || !strings.HasPrefix(out, "GPU 0:") {
		t.Fatalf("proprietary modules: exit %d: %q", code, out)
	}
}

func TestCaptureOfAnotherDriverAndWidth(t *testing.T) {
	h := newHost(t, "l40s__drv595.80") // recorded with a shorter version string
	h.library("580.95.05")
	h.loaded("580.95.05", "open")
	_, table := h.smi()
	lines := strings.Split(table, "\n")
	if !strings.Contains(lines[2], "NVIDIA-SMI 580.95.05") || !strings.Contains(lines[2], "Driver Version: 580.95.05") || !strings.Contains(lines[2], "CUDA Version: 13.0") {
		t.Fatalf("header %q", lines[2])
	}
	if len(lines[2]) != len(lines[1]) {
		t.Errorf("header width %d, frame %d:\n%s\n%s", len(lines[2]), len(lines[1]), lines[1], lines[2])
	}
	if strings.Contains(table, "595.80") {
		t.Error("the recorded driver version is still in the table")
	}
	_, v := h.smi("--version")
	if !strings.Contains(v, "DRIVER version      : 580.95.05") || !strings.Contains(v, "NVML version        : 580.95") {
		t.Errorf("--version: %q", v)
	}
}

func TestReplayOnly(t *testing.T) {
	h := newHost(t, "h100-80gb-hbm3__drv590.48.01")
	os.Remove(filepath.Join(h.root, hoststate.HardwareFile))
	code, out := h.smi(probeFields, "--format=csv,noheader,nounits")
	if code != 0 || !strings.Contains(out, ", 590.48.01, ") {
		t.Fatalf("replay-only: exit %d: %q", code, out)
	}
	h.write(hoststate.MismatchFile, "")
	if code, out := h.smi(); code != 18 || !strings.Contains(out, "Driver/library version mismatch") {
		t.Fatalf("replay-only mismatch: exit %d: %q", code, out)
	}
	if code, out := h.smi("--bogus"); code != 18 {
		t.Fatalf("exit %d: %q", code, out)
	}
	os.Remove(filepath.Join(h.root, hoststate.MismatchFile))
	if code, out := h.smi("--bogus"); code != 2 || !strings.Contains(out, "gpukit GPU SIMULATOR") {
		t.Fatalf("unsupported argument: exit %d: %q", code, out)
	}
}

// A wedged GPU: nvidia-smi never answers while the hang file exists.
func TestHang(t *testing.T) {
	h := newHost(t, "h100-80gb-hbm3__drv590.48.01")
	h.library("580.95.05")
	h.loaded("580.95.05", "open")
	h.write(hoststate.HangFile, "")
	done := make(chan int, 1)
	go func() { code, _ := h.smi(stateFields, "--format=csv,noheader"); done <- code }()
	select {
	case code := <-done:
		t.Fatalf("nvidia-smi answered (exit %d) on a wedged GPU", code)
	case <-time.After(300 * time.Millisecond):
	}
}

// A -q -x report alone answers the probe's and the state's queries, -L and
// -q, with the loaded driver.
func TestXMLReportAlone(t *testing.T) {
	h := newHost(t, "tesla-t4__drv515.105.01")
	h.library("580.95.05")
	h.loaded("580.95.05", "open")
	if code, out := h.smi(probeFields+",persistence_mode,pci.bus_id", "--format=csv,noheader,nounits"); code != 0 ||
		out != "0, GPU-d37e67a5-91dd-3774-a5cb-99096249601a, Tesla T4, 15360, 580.95.05, [N/A], Disabled, 00000000:00:1E.0\n" {
		t.Errorf("probe rows: exit %d %q", code, out)
	}
	if _, out := h.smi("-L"); out != "GPU 0: Tesla T4 (UUID: GPU-d37e67a5-91dd-3774-a5cb-99096249601a)\n" {
		t.Errorf("-L %q", out)
	}
	for _, args := range [][]string{{"-q"}, {"-q", "-x"}} {
		if code, out := h.smi(args...); code != 0 || !strings.Contains(out, "<driver_version>580.95.05</driver_version>") {
			t.Errorf("%v: exit %d", args, code)
		}
	}
}

// variant replaces the host's T4 report with a hand-made variant of it:
// the replacer's changes (product names, PCI device ids, another GPU),
// nothing else, for generations no capture was recorded on.
func (h fakeHost) variant(r *strings.Replacer) {
	h.t.Helper()
	p := "usr/share/gpusim/captures/tesla-t4__drv515.105.01__q-x.xml"
	b, err := os.ReadFile(filepath.Join(h.root, p))
	if err != nil {
		h.t.Fatal(err)
	}
	h.write(p, r.Replace(string(b)))
}

// A GPU whose generation the loaded driver's branch dropped is not driven:
// alone, the real module does not load (nvidia-smi cannot communicate with
// it), unless NVSwitches keep it loaded (no devices); beside a GPU the
// driver drives, it is out of the listings.
func TestDroppedGeneration(t *testing.T) {
	k80 := strings.NewReplacer("<product_name>Tesla T4<", "<product_name>Tesla K80<", "<pci_device_id>1EB810DE<", "<pci_device_id>102D10DE<")
	v100 := strings.NewReplacer("<product_name>Tesla T4<", "<product_name>Tesla V100-SXM2-16GB<", "<pci_device_id>1EB810DE<", "<pci_device_id>1DB110DE<")
	for _, tc := range []struct {
		name    string
		gpu     *strings.Replacer
		driver  string
		hw      string
		code    int
		outHead string
	}{
		{"Kepler on 590", k80, "590.48.01", "nvswitches=0\n", 9, "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."},
		{"Volta on 590", v100, "590.48.01", "nvswitches=0\n", 9, "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."},
		{"Volta on 590 with NVSwitches", v100, "590.48.01", "nvswitches=6\n", 6, "No devices were found\n"},
		{"Volta on 580", v100, "580.95.05", "nvswitches=0\n", 0, "0, Tesla V100-SXM2-16GB, 00000000:00:1E.0\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHost(t, "tesla-t4__drv515.105.01")
			h.variant(tc.gpu)
			h.write(hoststate.HardwareFile, tc.hw)
			h.library(tc.driver)
			h.loaded(tc.driver, "proprietary")
			code, out := h.smi("--query-gpu=index,name,pci.bus_id", "--format=csv,noheader")
			if code != tc.code || !strings.HasPrefix(out, tc.outHead) {
				t.Errorf("exit %d %q", code, out)
			}
		})
	}
	t.Run("beside a GPU it drives", func(t *testing.T) {
		h := newHost(t, "tesla-t4__drv515.105.01")
		p := filepath.Join(h.root, "usr/share/gpusim/captures/tesla-t4__drv515.105.01__q-x.xml")
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		// a K80 in front of the T4: a copy of its section, with another
		// bus id, UUID, name and device id; two GPUs attached
		x := strings.Replace(string(b), "<attached_gpus>1<", "<attached_gpus>2<", 1)
		start, end := strings.Index(x, "<gpu id="), strings.Index(x, "</gpu>")+len("</gpu>")
		sec := strings.NewReplacer("00000000:00:1E.0", "00000000:00:1D.0", "GPU-d37e67a5", "GPU-0000000a").Replace(k80.Replace(x[start:end]))
		h.write("usr/share/gpusim/captures/tesla-t4__drv515.105.01__q-x.xml", x[:start]+sec+"\n    "+x[start:])
		h.library("590.48.01")
		h.loaded("590.48.01", "proprietary")
		if code, out := h.smi("--query-gpu=index,name,pci.bus_id", "--format=csv,noheader"); code != 0 || out != "0, Tesla T4, 00000000:00:1E.0\n" {
			t.Errorf("rows: exit %d %q", code, out)
		}
		if _, out := h.smi("-L"); out != "GPU 0: Tesla T4 (UUID: GPU-d37e67a5-91dd-3774-a5cb-99096249601a)\n" {
			t.Errorf("-L %q", out)
		}
		if _, out := h.smi("-q", "-x"); strings.Count(out, "<gpu id=") != 1 || strings.Contains(out, "Tesla K80") || !strings.Contains(out, "<attached_gpus>1<") {
			t.Errorf("-q -x lists the K80")
		}
	})
}
