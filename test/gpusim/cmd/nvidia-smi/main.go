// Command nvidia-smi is the lab's GPU SIMULATOR stand-in for NVIDIA's
// nvidia-smi. Test tooling only, never shipped. It replays a real capture
// named by $GPUSIM_CAPTURE or the first line of /etc/gpusim/capture (a path
// prefix such as /usr/share/gpusim/captures/h100-80gb-hbm3__drv590.48.01).
//
// On a host with simulated hardware (/etc/gpusim/hardware.conf, written by
// gpusim.InstallHardware; this binary then comes with the stand-in nvidia-smi
// package) it answers like the real one for the host's driver state:
//
//   - no NVML library (libnvidia-ml.so.1) installed: it cannot find it (exit 12);
//   - no module loaded (/sys/module/nvidia/version): it cannot communicate
//     with the driver (exit 9);
//   - loaded module != installed library: "Failed to initialize NVML:
//     Driver/library version mismatch" (exit 18), until the host boots;
//   - a loaded driver whose branch drives none of the GPUs (a generation it
//     dropped, pkg/compat's table): it cannot communicate with the driver
//     (exit 9), as the real module does not load then; "No devices were
//     found" (exit 6) where the host has NVSwitches, which the real module
//     loads for;
//   - open modules on a pre-Turing GPU: no devices (exit 6);
//   - otherwise the capture, with the loaded driver's version (and its CUDA
//     version) in place of the recorded one, without the GPUs the driver's
//     branch dropped (but in the table), and persistence mode Enabled only
//     while the stand-in nvidia-persistenced runs in persistence mode.
//
// A capture may be a -q -x (or -q) report alone: --query-gpu and -L are
// derived from it, and -q replays it (test/gpusim/capture).
//
// Without hardware.conf (gpusim.Install, the replay-only simulation) it
// replays the capture as recorded, and reports the version mismatch while
// /etc/gpusim/mismatch exists.
package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/gpukit/gpukit/pkg/compat"
	"github.com/gpukit/gpukit/test/gpusim/capture"
	"github.com/gpukit/gpukit/test/gpusim/hoststate"
)

func main() {
	os.Exit(run(hoststate.FromEnv(), os.Args[1:], os.Stdout, os.Stderr))
}

// NVML's return codes, which nvidia-smi exits with.
const (
	exitNotFound        = 6
	exitDriverNotLoaded = 9
	exitLibraryNotFound = 12
	exitVersionMismatch = 18
	exitUnknown         = 15
)

func run(h hoststate.Host, args []string, stdout, stderr io.Writer) int {
	prefix := os.Getenv("GPUSIM_CAPTURE")
	if prefix == "" {
		prefix = h.Capture()
	}
	for h.Exists(hoststate.HangFile) {
		time.Sleep(time.Hour) // a wedged GPU: NVML never returns
	}
	hw := h.Hardware()
	var live capture.Live
	if hw == nil { // replay-only simulation
		if h.Exists(hoststate.MismatchFile) {
			fmt.Fprintln(stdout, "Failed to initialize NVML: Driver/library version mismatch")
			fmt.Fprintln(stdout, "NVML library version: 580.95")
			return exitVersionMismatch
		}
		if prefix == "" {
			return noDriver(stdout)
		}
	} else {
		lib := h.Library()
		loaded, flavor := h.Loaded()
		switch {
		case lib == "":
			fmt.Fprintln(stdout, "NVIDIA-SMI couldn't find libnvidia-ml.so library in your system. Please make sure that the NVIDIA Display Driver is properly installed and present in your system.")
			fmt.Fprintln(stdout, "Please also try adding directory that contains libnvidia-ml.so to your system PATH.")
			return exitLibraryNotFound
		case loaded == "":
			return noDriver(stdout)
		case loaded != lib:
			fmt.Fprintln(stdout, "Failed to initialize NVML: Driver/library version mismatch")
			fmt.Fprintln(stdout, "NVML library version: "+nvmlVersion(lib))
			return exitVersionMismatch
		case prefix == "":
			fmt.Fprintln(stderr, "nvidia-smi (gpukit GPU SIMULATOR stand-in): no capture configured in "+hoststate.CaptureFile)
			return 2
		}
		c := capture.Capture{Prefix: prefix}
		gpus, _ := c.GPUs()
		driven, ignored, _ := capture.Driven(gpus, loaded)
		if len(gpus) > 0 && len(driven) == 0 {
			if n := hw["nvswitches"]; n != "" && n != "0" {
				// a module that found NVSwitches loads without a GPU
				fmt.Fprintln(stdout, "No devices were found")
				return exitNotFound
			}
			// A real module that drives none of the GPUs does not load
			// (capture.Driven); the boot script loads the stand-in's
			// regardless, so nvidia-smi answers as with nothing loaded.
			return noDriver(stdout)
		}
		if h.Exists(hoststate.GPULostFile) {
			fmt.Fprintln(stdout, "Unable to determine the device handle for GPU"+firstBusID(c)+": Unknown Error")
			return exitUnknown
		}
		if len(args) > 0 && strings.HasPrefix(args[0], "--query-compute-apps=") {
			fmt.Fprint(stdout, h.ReadFile(hoststate.ComputeAppsFile))
			return 0
		}
		if flavor == "open" && preTuring(driven) {
			// The open modules do not drive GPUs older than Turing.
			fmt.Fprintln(stdout, "No devices were found")
			return exitNotFound
		}
		live = capture.Live{Driver: loaded, CUDA: cudaFor(loaded, c), Persistence: "Disabled"}
		for _, g := range ignored {
			live.Hidden = append(live.Hidden, g.BusID) // the driver's branch dropped them
		}
		if h.PersistenceMode() {
			live.Persistence = "Enabled"
		}
	}
	ma, isMIG, err := parseMIG(args)
	if err != nil {
		fmt.Fprintln(stdout, err)
		return exitInvalidArgument
	}
	c := capture.Capture{Prefix: prefix}
	if isMIG && hw != nil {
		return runMIG(h, c, ma, stdout)
	}
	if isMIG || (ma.index >= 0 && hw == nil) {
		fmt.Fprintln(stderr, capture.Unsupported(strings.Join(args, " ")+" (MIG and -i are simulated on hosts with simulated hardware only)"))
		return 2
	}
	out, err := replay(c, ma.rest, live)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	if hw != nil {
		out = withMIG(h, c, ma, out)
	}
	fmt.Fprint(stdout, out)
	return 0
}

// withMIG adds the simulated MIG state to a replayed answer: the MIG
// devices under -L, the modes in --query-gpu rows (one row with -i).
func withMIG(h hoststate.Host, c capture.Capture, a migArgs, out string) string {
	gpus, err := c.GPUs()
	if err != nil {
		return out
	}
	var fields []string
	header := true
	for i, arg := range a.rest {
		switch {
		case arg == "-L" || arg == "--list-gpus":
			if !h.Exists(hoststate.MIGStateFile) {
				return out // no MIG change yet: the capture as recorded
			}
			return migList(h, out, len(gpus))
		case strings.HasPrefix(arg, "--query-gpu="):
			fields = strings.Split(strings.TrimPrefix(arg, "--query-gpu="), ",")
		case arg == "--query-gpu" && i+1 < len(a.rest):
			fields = strings.Split(a.rest[i+1], ",")
		case strings.HasPrefix(arg, "--format=") && strings.Contains(arg, "noheader"):
			header = false
		case arg == "--format" && i+1 < len(a.rest) && strings.Contains(a.rest[i+1], "noheader"):
			header = false
		}
	}
	if fields == nil {
		return out
	}
	return migRows(h, out, fields, header, a.index, len(gpus), h.Exists(hoststate.MIGStateFile))
}

func noDriver(stdout io.Writer) int {
	fmt.Fprintln(stdout, "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running.")
	fmt.Fprintln(stdout)
	return exitDriverNotLoaded
}

// nvmlVersion is how nvidia-smi names the library: 580.95.05 -> 580.95.
func nvmlVersion(v string) string {
	f := strings.Split(v, ".")
	if len(f) > 2 {
		f = f[:2]
	}
	return strings.Join(f, ".")
}

// cudaFor is the newest CUDA version the driver runs (what nvidia-smi calls
// "CUDA Version"); the capture's own when the driver is the recorded one or
// newer than the compatibility table knows.
func cudaFor(driver string, c capture.Capture) string {
	if driver == c.RecordedDriver() {
		return ""
	}
	d, err := compat.ParseDriver(driver)
	if err != nil {
		return ""
	}
	cuda := ""
	for _, r := range compat.Releases() {
		if d.Compare(r.MinDriver) >= 0 {
			cuda = r.CUDA.String()
		}
	}
	return cuda
}

// preTuring says whether a GPU is of a generation the open modules do not
// drive (pkg/compat's table, by device id, else name: a report may hide
// the id).
func preTuring(gpus []capture.GPU) bool {
	for _, g := range gpus {
		if a, ok := compat.Recognize(fmt.Sprintf("0x%04x", g.Device()), g.Name); ok && !a.OpenModules {
			return true
		}
	}
	return false
}

func replay(c capture.Capture, args []string, live capture.Live) (string, error) {
	var fields []string
	format := "csv"
	query, xml := false, false
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-L" || a == "--list-gpus":
			b, err := c.Replay(capture.KindList, live)
			return string(b), err
		case a == "-q" || a == "--query":
			query = true
		case a == "-x" || a == "--xml-format":
			xml = true
		case a == "-qx" || a == "-xq":
			query, xml = true, true
		case a == "--version":
			return version(c, live), nil
		case strings.HasPrefix(a, "--query-gpu="):
			fields = strings.Split(strings.TrimPrefix(a, "--query-gpu="), ",")
		case a == "--query-gpu" && i+1 < len(args):
			i++
			fields = strings.Split(args[i], ",")
		case strings.HasPrefix(a, "--format="):
			format = strings.TrimPrefix(a, "--format=")
		case a == "--format" && i+1 < len(args):
			i++
			format = args[i]
		default:
			return "", capture.Unsupported(a)
		}
	}
	switch {
	case fields != nil:
		return c.ReplayQueryGPU(fields, format, live)
	case query && xml:
		b, err := c.Replay(capture.KindQueryXML, live)
		return string(b), err
	case query:
		b, err := c.Replay(capture.KindQuery, live)
		return string(b), err
	case xml:
		return "", capture.Unsupported("-x without -q")
	}
	b, err := c.Replay(capture.KindTable, live)
	return string(b), err
}

func version(c capture.Capture, live capture.Live) string {
	drv := live.Driver
	if drv == "" {
		drv = c.RecordedDriver()
	}
	cuda := live.CUDA
	if cuda == "" {
		cuda = cudaFor(drv, capture.Capture{})
	}
	return fmt.Sprintf("NVIDIA-SMI version  : %s\nNVML version        : %s\nDRIVER version      : %s\nCUDA Version        : %s\n",
		drv, nvmlVersion(drv), drv, cuda)
}

// firstBusID is the capture's first GPU's bus id, as nvidia-smi names it in
// its errors.
func firstBusID(c capture.Capture) string {
	gpus, err := c.GPUs()
	if err != nil || len(gpus) == 0 {
		return "00000000:00:00.0"
	}
	return gpus[0].BusID
}
