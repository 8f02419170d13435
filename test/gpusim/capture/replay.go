package capture

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Live is the state of a simulated host that a replay shows instead of what
// was recorded; zero fields keep the recording.
type Live struct {
	// Driver is the loaded driver (and NVML library) version: it replaces
	// the recorded version wherever the recording shows it.
	Driver string
	// CUDA is the newest CUDA version that driver supports ("13.0").
	CUDA string
	// Persistence is "Enabled" or "Disabled".
	Persistence string
	// Hidden are the bus ids of GPUs the loaded driver does not drive
	// (Driven): nvidia-smi does not list them, and numbers the others from
	// 0. The table (nvidia-smi without arguments) still shows them.
	Hidden []string
}

// hides says whether live hides the GPU at bus id bus.
func (l Live) hides(bus string) bool {
	for _, h := range l.Hidden {
		if (GPU{BusID: h}).PCIAddress() == (GPU{BusID: bus}).PCIAddress() {
			return true
		}
	}
	return false
}

// Replay is a recording of kind (KindList, KindTable, KindQuery,
// KindQueryXML) as a host in state live prints it; for a capture recorded
// only as a report, what the report answers (Capture.output).
func (c Capture) Replay(kind string, live Live) ([]byte, error) {
	raw, kind, err := c.output(kind)
	if err != nil {
		return nil, err
	}
	s := string(raw)
	table := kind == KindTable
	if old := c.RecordedDriver(); live.Driver != "" && old != "" && old != live.Driver {
		s = replaceVersion(s, old, live.Driver, table)
	}
	if live.CUDA != "" {
		s = replaceCUDA(s, live.CUDA, table)
	}
	if live.Persistence != "" {
		s = replacePersistence(s, kind, live.Persistence == "Enabled")
	}
	if len(live.Hidden) > 0 {
		switch kind {
		case KindList:
			s = c.hideListed(s, live)
		case KindQuery, KindQueryXML:
			s = hideSections(s, kind == KindQueryXML, live)
		}
	}
	return []byte(s), nil
}

var (
	listGPU      = regexp.MustCompile(`^GPU ([0-9]+): `)
	attachedText = regexp.MustCompile(`(?m)^(Attached GPUs\s*:\s*)([0-9]+)`)
	attachedXML  = regexp.MustCompile(`(<attached_gpus>)([0-9]+)(</attached_gpus>)`)
)

// hideListed drops from -L the GPUs live hides (with their MIG devices'
// lines) and numbers the others again; -L lists the GPUs in the order of
// the capture's GPUs.
func (c Capture) hideListed(s string, live Live) string {
	gpus, err := c.GPUs()
	if err != nil {
		return s
	}
	var b strings.Builder
	n, skip := 0, false
	for _, l := range strings.SplitAfter(s, "\n") {
		if m := listGPU.FindStringSubmatch(l); m != nil {
			i, _ := strconv.Atoi(m[1])
			skip = i < len(gpus) && live.hides(gpus[i].BusID)
			if !skip {
				l = fmt.Sprintf("GPU %d: ", n) + l[len(m[0]):]
				n++
			}
		}
		if !skip {
			b.WriteString(l)
		}
	}
	return b.String()
}

// hideSections drops from a -q or -q -x report the GPUs live hides, and
// counts them out of the attached GPUs.
func hideSections(s string, xml bool, live Live) string {
	var b strings.Builder
	at, hidden := 0, 0
	for _, sec := range bounds(s, xml) {
		if live.hides(s[sec[2]:sec[3]]) {
			b.WriteString(s[at:sec[0]])
			at = sec[1]
			hidden++
		}
	}
	b.WriteString(s[at:])
	out := b.String()
	if hidden == 0 {
		return out
	}
	fewer := func(m string, re *regexp.Regexp) string {
		sub := re.FindStringSubmatch(m)
		n, _ := strconv.Atoi(sub[2])
		return sub[1] + strconv.Itoa(max(n-hidden, 0)) + strings.Join(sub[3:], "")
	}
	if xml {
		return attachedXML.ReplaceAllStringFunc(out, func(m string) string { return fewer(m, attachedXML) })
	}
	return attachedText.ReplaceAllStringFunc(out, func(m string) string { return fewer(m, attachedText) })
}

// ReplayQueryGPU is QueryGPU as a host in state live answers it.
func (c Capture) ReplayQueryGPU(fields []string, format string, live Live) (string, error) {
	raw, _, err := c.output(KindQueryGPU)
	if err != nil {
		return "", err
	}
	set := map[string]string{}
	if live.Driver != "" {
		set["driver_version"], set["kmd_version"] = live.Driver, live.Driver
	}
	if live.CUDA != "" {
		set["cuda_version"] = live.CUDA
	}
	if live.Persistence != "" {
		set["persistence_mode"] = live.Persistence
	}
	var hide func(string) bool
	if len(live.Hidden) > 0 {
		hide = live.hides
	}
	return queryGPU(c.Prefix, raw, fields, format, set, hide)
}

// replaceVersion replaces the driver version old by new as a whole token; in
// the table the spaces after it shrink or grow, so the frame stays aligned.
func replaceVersion(s, old, new string, keepWidth bool) string {
	re := regexp.MustCompile(`(^|[^0-9.])` + regexp.QuoteMeta(old) + `( *)([^0-9.]|$)`)
	return re.ReplaceAllStringFunc(s, func(m string) string {
		sub := re.FindStringSubmatch(m)
		spaces := sub[2]
		if keepWidth && len(spaces) > 1 {
			n := max(len(spaces)-(len(new)-len(old)), 1)
			spaces = strings.Repeat(" ", n)
		}
		return sub[1] + new + spaces + sub[3]
	})
}

var (
	cudaTable = regexp.MustCompile(`(CUDA (?:UMD )?Version: *)([0-9]+\.[0-9]+)( *)`)
	cudaQuery = regexp.MustCompile(`(?m)^(CUDA (?:UMD )?Version *: *)([0-9]+\.[0-9]+)()`)
	cudaXML   = regexp.MustCompile(`(<cuda_version>)[^<]*()()(</cuda_version>)`)
)

func replaceCUDA(s, cuda string, table bool) string {
	s = cudaXML.ReplaceAllString(s, "${1}"+cuda+"${4}")
	s = cudaQuery.ReplaceAllString(s, "${1}"+cuda)
	if table {
		s = cudaTable.ReplaceAllStringFunc(s, func(m string) string {
			sub := cudaTable.FindStringSubmatch(m)
			spaces := sub[3]
			if len(spaces) > 1 {
				spaces = strings.Repeat(" ", max(len(spaces)-(len(cuda)-len(sub[2])), 1))
			}
			return sub[1] + cuda + spaces
		})
	}
	return s
}

var (
	persistQuery = regexp.MustCompile(`(?m)^(\s*Persistence Mode\s*:\s*)(\S+)`)
	persistXML   = regexp.MustCompile(`(<persistence_mode>)[^<]*(</persistence_mode>)`)
	tableGPURow  = regexp.MustCompile(`^\|\s+[0-9]+\s`)
)

func replacePersistence(s, kind string, on bool) string {
	word, short := "Disabled", "Off"
	if on {
		word, short = "Enabled", "On "
	}
	switch kind {
	case KindQuery:
		return persistQuery.ReplaceAllString(s, "${1}"+word)
	case KindQueryXML:
		return persistXML.ReplaceAllString(s, "${1}"+word+"${2}")
	case KindTable:
		lines := strings.Split(s, "\n")
		for i, l := range lines {
			if !tableGPURow.MatchString(l) {
				continue
			}
			// the Persistence-M value ends the first cell, "On " or "Off" at a fixed column
			end := strings.Index(l[1:], "|") + 1
			if end <= 0 {
				continue
			}
			cell := strings.TrimRight(l[:end], " ")
			at := -1
			switch {
			case strings.HasSuffix(cell, " Off"):
				at = len(cell) - 3
			case strings.HasSuffix(cell, " On"):
				at = len(cell) - 2
			}
			if at > 0 && at+3 <= end {
				lines[i] = l[:at] + short + l[at+3:]
			}
		}
		return strings.Join(lines, "\n")
	}
	return s
}

// Unsupported is nvidia-smi's answer to an argument the stand-in does not
// replay.
func Unsupported(arg string) error {
	return fmt.Errorf("nvidia-smi (gpukit GPU SIMULATOR stand-in): unsupported argument %q", arg)
}
