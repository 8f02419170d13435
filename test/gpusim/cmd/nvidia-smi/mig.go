package main

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/gpukit/gpukit/test/gpusim/capture"
	"github.com/gpukit/gpukit/test/gpusim/hoststate"
	"github.com/gpukit/gpukit/test/gpusim/migsim"
)

// MIG, SIMULATED (test/gpusim/migsim): nvidia-smi -i N -mig 0|1, -i N -r,
// mig -lgip / -lgi / -cgi LIST [-C] / -dci / -dgi, the MIG devices in -L,
// and mig.mode.current/pending in --query-gpu. NVML's return codes.
const (
	exitInvalidArgument = 2
	exitNotSupported    = 3
	exitInsufficient    = 23
	exitInUse           = 19
)

// migState is the host's MIG state file.
type migState struct {
	Boot string              `json:"boot"`
	GPUs map[int]*migsim.GPU `json:"gpus"`
	h    hoststate.Host
}

// loadMIG reads the state: GPUs never touched are Disabled; a new boot
// loses the instances and makes the pending modes current.
func loadMIG(h hoststate.Host, n int) *migState {
	s := &migState{GPUs: map[int]*migsim.GPU{}, h: h}
	_ = json.Unmarshal([]byte(h.ReadFile(hoststate.MIGStateFile)), s)
	s.h = h
	if boot := h.FirstLine(hoststate.BootIDFile); boot != s.Boot {
		for _, g := range s.GPUs {
			g.Mode, g.Instances = g.Pending, nil
		}
		s.Boot = boot
	}
	for i := range n {
		if s.GPUs[i] == nil {
			s.GPUs[i] = &migsim.GPU{Mode: "Disabled", Pending: "Disabled"}
		}
	}
	return s
}

func (s *migState) save() error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return s.h.WriteFile(hoststate.MIGStateFile, b)
}

// migArgs are the MIG arguments of a command line.
type migArgs struct {
	index        int // -i; -1: all
	mig          string
	reset, sub   bool
	lgip, lgi, C bool
	cgi          string
	dci, dgi     bool
	rest         []string // what replay answers
}

func parseMIG(args []string) (migArgs, bool, error) {
	a := migArgs{index: -1}
	isMIG := false
	for i := 0; i < len(args); i++ {
		next := func() string {
			if i+1 < len(args) {
				i++
				return args[i]
			}
			return ""
		}
		switch args[i] {
		case "-i", "--id":
			v := next()
			n, err := strconv.Atoi(v)
			if err != nil {
				return a, true, fmt.Errorf("Invalid GPU index %q (gpukit GPU SIMULATOR: indexes only)", v)
			}
			a.index = n
		case "-mig", "--multi-instance-gpu":
			a.mig, isMIG = next(), true
		case "-r", "--gpu-reset":
			a.reset, isMIG = true, true
		case "mig":
			a.sub, isMIG = true, true
		case "-lgip", "--list-gpu-instance-profiles":
			a.lgip = true
		case "-lgi", "--list-gpu-instances":
			a.lgi = true
		case "-cgi", "--create-gpu-instance":
			a.cgi = next()
		case "-C", "--default-compute-instance":
			a.C = true
		case "-dci", "--destroy-compute-instance":
			a.dci = true
		case "-dgi", "--destroy-gpu-instance":
			a.dgi = true
		default:
			a.rest = append(a.rest, args[i])
		}
	}
	if a.index >= 0 && !isMIG {
		// -i with a query: replay answers it, this filters the rows.
		return a, false, nil
	}
	return a, isMIG, nil
}

// runMIG answers a MIG command line on a host whose driver answers.
func runMIG(h hoststate.Host, c capture.Capture, a migArgs, stdout io.Writer) int {
	gpus, err := c.GPUs()
	if err != nil {
		fmt.Fprintln(stdout, err)
		return exitUnknown
	}
	model, hasMIG, err := migsim.Load(migsim.LGIPFile(c.Prefix))
	if err != nil {
		fmt.Fprintln(stdout, err)
		return exitUnknown
	}
	s := loadMIG(h, len(gpus))
	targets := []int{}
	for i := range gpus {
		if a.index < 0 || a.index == i {
			targets = append(targets, i)
		}
	}
	if a.index >= len(gpus) {
		fmt.Fprintf(stdout, "No devices were found\n")
		return exitNotFound
	}
	code := 0
	switch {
	case a.mig != "":
		want := map[string]string{"1": "Enabled", "0": "Disabled", "ENABLED": "Enabled", "DISABLED": "Disabled"}[strings.ToUpper(a.mig)]
		if want == "" {
			fmt.Fprintf(stdout, "Invalid MIG mode %q\n", a.mig)
			return exitInvalidArgument
		}
		for _, i := range targets {
			bus, g := gpus[i].BusID, s.GPUs[i]
			verb := strings.TrimSuffix(strings.ToLower(want), "d")
			switch {
			case !hasMIG:
				fmt.Fprintf(stdout, "Unable to %s MIG Mode for GPU %s: Not Supported\n", verb, bus)
				code = exitNotSupported
				continue
			case want == "Disabled" && len(g.Instances) > 0:
				fmt.Fprintf(stdout, "Unable to disable MIG Mode for GPU %s: In use by another client\n", bus)
				code = exitInUse
				continue
			}
			g.Pending = want
			if h.Exists(hoststate.MIGNeedsResetFile) && g.Mode != want {
				fmt.Fprintf(stdout, "Warning: MIG mode is in pending %s state for GPU %s:Not Supported\n", strings.ToLower(want[:len(want)-1]), bus)
				fmt.Fprintf(stdout, "Reboot the system or try nvidia-smi --gpu-reset to make MIG mode effective on GPU %s\n", bus)
				continue
			}
			g.Mode = want
			fmt.Fprintf(stdout, "%s MIG Mode for GPU %s\n", want, bus)
		}
		fmt.Fprintln(stdout, "All done.")
	case a.reset:
		for _, i := range targets {
			if h.PersistenceMode() || strings.TrimSpace(h.ReadFile(hoststate.ComputeAppsFile)) != "" {
				fmt.Fprintf(stdout, "The following GPUs could not be reset:\n  GPU %s: In use by another client\n\n", gpus[i].BusID)
				fmt.Fprintln(stdout, "1 device is currently being used by one or more other processes (e.g., Fabric Manager, CUDA application, graphics application such as an X server, or a monitoring application such as another instance of nvidia-smi). Please first kill all processes using this device and all compute applications running in the system.")
				return exitInUse
			}
			g := s.GPUs[i]
			g.Mode, g.Instances = g.Pending, nil
			fmt.Fprintf(stdout, "GPU %s was successfully reset.\n", gpus[i].BusID)
		}
		fmt.Fprintln(stdout, "All done.")
	case a.sub && a.lgip:
		on := map[int]*migsim.GPU{}
		for _, i := range targets {
			if s.GPUs[i].Mode == "Enabled" {
				on[i] = s.GPUs[i]
			}
		}
		if !hasMIG || len(on) == 0 {
			fmt.Fprintln(stdout, "No MIG-enabled devices found.")
			return exitNotFound
		}
		fmt.Fprint(stdout, migsim.RenderLGIP(model, on))
	case a.sub && a.lgi:
		out := renderLGI(s, model, targets)
		fmt.Fprint(stdout, out)
		if strings.HasPrefix(out, "No GPU instances") {
			return exitNotFound
		}
	case a.sub && a.cgi != "":
		for _, i := range targets {
			g := s.GPUs[i]
			for _, want := range strings.Split(a.cgi, ",") {
				p, ok := model.Profile(strings.TrimSpace(want))
				if !ok || !hasMIG {
					fmt.Fprintf(stdout, "Unable to create a GPU instance on GPU %2d using profile %s: Not Found\n", i, want)
					fmt.Fprintln(stdout, "Failed to create GPU instances: Not Found")
					code = exitNotFound
					break
				}
				in, err := g.Create(model, p, a.C)
				if err != nil {
					fmt.Fprintf(stdout, "Unable to create a GPU instance on GPU %2d using profile %d: %v\n", i, p.ID, err)
					fmt.Fprintf(stdout, "Failed to create GPU instances: %v\n", err)
					code = exitInsufficient
					if g.Mode != "Enabled" {
						code = exitNotSupported
					}
					break
				}
				fmt.Fprintf(stdout, "Successfully created GPU instance ID %2d on GPU %2d using profile MIG %s (ID %2d)\n", in.ID, i, p.Name, p.ID)
				if a.C {
					fmt.Fprintf(stdout, "Successfully created compute instance ID  0 on GPU %2d GPU instance ID %2d using profile MIG %s (ID %2d)\n", i, in.ID, p.Name, p.Compute-1)
				}
			}
		}
	case a.sub && a.dci:
		n := 0
		for _, i := range targets {
			for k := range s.GPUs[i].Instances {
				in := &s.GPUs[i].Instances[k]
				if in.Compute {
					in.Compute = false
					n++
					fmt.Fprintf(stdout, "Successfully destroyed compute instance ID  0 from GPU %2d GPU instance ID %2d\n", i, in.ID)
				}
			}
		}
		if n == 0 {
			fmt.Fprintln(stdout, "No compute instances found: Not Found")
			return exitNotFound
		}
	case a.sub && a.dgi:
		n := 0
		for _, i := range targets {
			g := s.GPUs[i]
			kept := g.Instances[:0]
			for _, in := range g.Instances {
				if in.Compute {
					fmt.Fprintf(stdout, "Unable to destroy GPU instance ID %2d from GPU %2d: In use by another client\n", in.ID, i)
					code = exitInUse
					kept = append(kept, in)
					continue
				}
				n++
				fmt.Fprintf(stdout, "Successfully destroyed GPU instance ID %2d from GPU %2d\n", in.ID, i)
			}
			g.Instances = kept
		}
		if n == 0 && code == 0 {
			fmt.Fprintln(stdout, "No GPU instances found: Not Found")
			return exitNotFound
		}
	default:
		fmt.Fprintln(stdout, capture.Unsupported(strings.Join(a.rest, " ")))
		return exitInvalidArgument
	}
	if err := s.save(); err != nil {
		fmt.Fprintln(stdout, err)
		return exitUnknown
	}
	return code
}

func renderLGI(s *migState, model migsim.Model, targets []int) string {
	var b strings.Builder
	line := "+-------------------------------------------------------+\n"
	b.WriteString(line + "| GPU instances:                                        |\n| GPU   Name             Profile  Instance   Placement  |\n|                          ID       ID       Start:Size |\n|=======================================================|\n")
	n := 0
	for _, i := range targets {
		ins := slices.Clone(s.GPUs[i].Instances)
		slices.SortFunc(ins, func(x, y migsim.Instance) int { return x.Start - y.Start })
		for _, in := range ins {
			if n > 0 {
				b.WriteString(line)
			}
			p, _ := model.Profile(in.Profile)
			fmt.Fprintf(&b, "|%4d  MIG %-14s%4d%9d%13s     |\n", i, in.Profile, p.ID, in.ID, fmt.Sprintf("%d:%d", in.Start, in.Slices))
			n++
		}
	}
	if n == 0 {
		return "No GPU instances found: Not Found\n"
	}
	return b.String() + line
}

// migList adds the MIG devices (GPU instances with a compute instance)
// under their GPUs in -L.
func migList(h hoststate.Host, list string, n int) string {
	s := loadMIG(h, n)
	var b strings.Builder
	for _, line := range strings.SplitAfter(list, "\n") {
		b.WriteString(line)
		var i int
		var uuid string
		if _, err := fmt.Sscanf(line, "GPU %d:", &i); err != nil || s.GPUs[i] == nil || s.GPUs[i].Mode != "Enabled" {
			continue
		}
		if k := strings.Index(line, "(UUID: "); k >= 0 {
			uuid = strings.TrimSuffix(strings.TrimSpace(line[k+7:]), ")")
		}
		d := 0
		for _, in := range s.GPUs[i].Instances {
			if !in.Compute {
				continue
			}
			f := fnv.New64a()
			fmt.Fprintf(f, "%s/%d", uuid, in.ID)
			x := f.Sum64()
			fmt.Fprintf(&b, "  MIG %-11s Device %2d: (UUID: MIG-%08x-%04x-%04x-%04x-%012x)\n", in.Profile, d, uint32(x>>32), uint16(x>>16), uint16(x), uint16(x>>48), x&0xffffffffffff)
			d++
		}
	}
	return b.String()
}

// migRows puts the GPUs' MIG modes in --query-gpu rows (where the capture
// has a MIG mode at all; once a MIG command changed one: before, the
// capture's recorded modes stand) and keeps only GPU index's row when -i
// asked.
func migRows(h hoststate.Host, out string, fields []string, header bool, index, n int, touched bool) string {
	s := loadMIG(h, n)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	var kept []string
	for k, line := range lines {
		if header && k == 0 {
			kept = append(kept, line)
			continue
		}
		row := k
		if header {
			row--
		}
		if index >= 0 && row != index {
			continue
		}
		if touched {
			line = migsim.SetModes(fields, line, s.GPUs[row])
		}
		kept = append(kept, line)
	}
	return strings.Join(kept, "\n") + "\n"
}
