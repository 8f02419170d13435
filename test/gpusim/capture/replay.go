package capture

import (
	"fmt"
	"regexp"
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
}

// Replay is a recording of kind (KindList, KindTable, KindQuery,
// KindQueryXML) as a host in state live prints it.
func (c Capture) Replay(kind string, live Live) ([]byte, error) {
	raw, err := c.Raw(kind)
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
	return []byte(s), nil
}

// ReplayQueryGPU is QueryGPU as a host in state live answers it.
func (c Capture) ReplayQueryGPU(fields []string, format string, live Live) (string, error) {
	raw, err := c.Raw(KindQueryGPU)
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
	return queryGPU(c.Prefix, raw, fields, format, set)
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
