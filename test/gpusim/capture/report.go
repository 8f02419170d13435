package capture

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// A report is nvidia-smi's full report of a machine, `-q -x` (XML) or `-q`
// (text). Most public recordings of a GPU are only that, so a capture whose
// only recording is a report still stands up a GPU model: the --query-gpu
// rows and the -L list the probe, the verification and the stand-in ask for
// are derived from it (reportQueryGPU, reportList), and `nvidia-smi -q`
// replays the XML report where no text one was recorded (see output).

// report is the capture's report: the -q -x recording, else the -q one.
func (c Capture) report() (raw string, xml bool, err error) {
	if b, err := c.Raw(KindQueryXML); err == nil {
		return string(b), true, nil
	}
	b, err := c.Raw(KindQuery)
	if err != nil {
		return "", false, fmt.Errorf("gpusim: capture %s has no --query-gpu recording and no -q or -q -x report", c.Prefix)
	}
	return string(b), false, nil
}

// section is one GPU's part of a report.
type section struct {
	bus  string // nvidia-smi's bus id, 00000000:18:00.0
	text string // without the GPU's MIG devices
	xml  bool
}

var (
	xMIGDevices = regexp.MustCompile(`(?s)<mig_devices>.*?</mig_devices>`)
	xEnd        = regexp.MustCompile(`</nvidia_smi_log>`)
)

// bounds are where each GPU's part of a report begins and ends, and where
// its bus id is: [start, end, bus start, bus end].
func bounds(report string, xml bool) [][4]int {
	re := qGPU
	if xml {
		re = xGPU
	}
	locs := re.FindAllStringSubmatchIndex(report, -1)
	out := make([][4]int, len(locs))
	for i, l := range locs {
		end := len(report)
		if i+1 < len(locs) {
			end = locs[i+1][0]
		} else if xml {
			if e := xEnd.FindStringIndex(report[l[0]:]); e != nil {
				end = l[0] + e[0]
			}
		}
		out[i] = [4]int{l[0], end, l[2], l[3]}
	}
	return out
}

// Split cuts a report (-q or -q -x) into what comes before its GPUs, each
// GPU's part (with its MIG devices) and what follows them: the simulators
// build a host's report from the recorded GPUs' parts.
func Split(report string, xml bool) (head string, gpus []string, tail string) {
	b := bounds(report, xml)
	if len(b) == 0 {
		return report, nil, ""
	}
	for _, g := range b {
		gpus = append(gpus, report[g[0]:g[1]])
	}
	return report[:b[0][0]], gpus, report[b[len(b)-1][1]:]
}

// sections splits a report into its GPUs, each without its MIG devices: a
// MIG device repeats the GPU's field names (its memory total is not the
// GPU's).
func sections(report string, xml bool) []section {
	var out []section
	for _, b := range bounds(report, xml) {
		s := section{bus: report[b[2]:b[3]], text: report[b[0]:b[1]], xml: xml}
		if xml {
			s.text = xMIGDevices.ReplaceAllString(s.text, "")
		} else {
			s.text = dropTextBlocks(s.text, "MIG Device")
		}
		out = append(out, s)
	}
	return out
}

// dropTextBlocks removes from a -q text section every block whose header
// line begins with header, with the lines indented deeper than it.
func dropTextBlocks(s, header string) string {
	lines := strings.SplitAfter(s, "\n")
	var b strings.Builder
	skip := -1 // the indentation of the block being dropped
	for _, l := range lines {
		indent := len(l) - len(strings.TrimLeft(l, " "))
		trimmed := strings.TrimSpace(l)
		if skip >= 0 {
			if trimmed == "" || indent > skip {
				continue
			}
			skip = -1
		}
		if strings.HasPrefix(trimmed, header) && !strings.Contains(trimmed, ":") {
			skip = indent
			continue
		}
		b.WriteString(l)
	}
	return b.String()
}

// get is the value at path in the section: each element but the last
// names a block (an XML element, a text heading) the next is looked for
// after; "" when the report does not have it.
func (s section) get(path ...string) string {
	rest := s.text
	for _, p := range path[:len(path)-1] {
		var at []int
		if s.xml {
			at = regexp.MustCompile(`<` + regexp.QuoteMeta(p) + `>`).FindStringIndex(rest)
		} else {
			at = regexp.MustCompile(`(?m)^\s*` + regexp.QuoteMeta(p) + `\s*$`).FindStringIndex(rest)
		}
		if at == nil {
			return ""
		}
		rest = rest[at[1]:]
	}
	last := path[len(path)-1]
	if s.xml {
		if m := xTag(last).FindStringSubmatch(rest); m != nil {
			return strings.TrimSpace(m[1])
		}
		return ""
	}
	if m := qField(last).FindStringSubmatch(rest); m != nil {
		return m[1]
	}
	return ""
}

// reportField is a --query-gpu field and where each form of the report
// has it.
type reportField struct {
	name, unit string
	xml, text  []string
}

// reportFields are the --query-gpu fields a report answers besides index,
// pci.bus_id and driver_version: what gpukit asks (pkg/facts
// GPUQueryFields, the state and health scripts) and what the simulators
// read (the PCI ids).
var reportFields = []reportField{
	{"name", "", []string{"product_name"}, []string{"Product Name"}},
	{"uuid", "", []string{"uuid"}, []string{"GPU UUID"}},
	{"serial", "", []string{"serial"}, []string{"Serial Number"}},
	{"vbios_version", "", []string{"vbios_version"}, []string{"VBIOS Version"}},
	{"pci.device_id", "", []string{"pci", "pci_device_id"}, []string{"PCI", "Device Id"}},
	{"pci.sub_device_id", "", []string{"pci", "pci_sub_system_id"}, []string{"PCI", "Sub System Id"}},
	{"memory.total", "MiB", []string{"fb_memory_usage", "total"}, []string{"FB Memory Usage", "Total"}},
	{"persistence_mode", "", []string{"persistence_mode"}, []string{"Persistence Mode"}},
	{"mig.mode.current", "", []string{"mig_mode", "current_mig"}, []string{"MIG Mode", "Current"}},
	{"mig.mode.pending", "", []string{"mig_mode", "pending_mig"}, []string{"MIG Mode", "Pending"}},
}

// reportQueryGPU is the --query-gpu CSV (header with units, one row a GPU)
// the report answers, as nvidia-smi prints it: a value the report does not
// give is [N/A], PCI ids are 0x-prefixed hex.
func (c Capture) reportQueryGPU() ([]byte, error) {
	report, xml, err := c.report()
	if err != nil {
		return nil, err
	}
	secs := sections(report, xml)
	if len(secs) == 0 {
		return nil, fmt.Errorf("gpusim: capture %s: no GPU in its report", c.Prefix)
	}
	header := []string{"index", "pci.bus_id", "driver_version"}
	for _, f := range reportFields {
		h := f.name
		if f.unit != "" {
			h += " [" + f.unit + "]"
		}
		header = append(header, h)
	}
	var b strings.Builder
	b.WriteString(strings.Join(header, ", ") + "\n")
	driver := c.RecordedDriver()
	for i, s := range secs {
		row := []string{strconv.Itoa(i), s.bus, driver}
		for _, f := range reportFields {
			path := f.text
			if xml {
				path = f.xml
			}
			row = append(row, csvValue(f.name, s.get(path...)))
		}
		b.WriteString(strings.Join(row, ", ") + "\n")
	}
	return []byte(b.String()), nil
}

// csvValue is a report's value as --query-gpu prints it.
func csvValue(field, v string) string {
	if strings.HasPrefix(field, "pci.") && strings.HasSuffix(field, "_id") {
		if _, ok := hex32(v); !ok {
			return "[N/A]" // e.g. [REDACTED] in a shared report
		}
		return "0x" + strings.ToUpper(strings.TrimPrefix(strings.TrimPrefix(v, "0x"), "0X"))
	}
	if v == "" || v == "N/A" {
		return "[N/A]"
	}
	return v
}

// reportList is `nvidia-smi -L` from the report: one line a GPU. A report
// does not have its MIG devices' UUIDs, so their lines are left out.
func (c Capture) reportList() ([]byte, error) {
	report, xml, err := c.report()
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	for _, g := range gpusFromReport(report, xml) {
		fmt.Fprintf(&b, "GPU %d: %s (UUID: %s)\n", g.Index, g.Name, g.UUID)
	}
	if b.Len() == 0 {
		return nil, fmt.Errorf("gpusim: capture %s: no GPU in its report", c.Prefix)
	}
	return []byte(b.String()), nil
}

// output is what nvidia-smi prints for kind: the recording, else, for a
// capture recorded only as a report, what the report answers (the kind of
// the bytes returned says which form they are in: -q answers with the -q
// -x report where no text one was recorded, which gpukit's parser reads
// alike).
func (c Capture) output(kind string) ([]byte, string, error) {
	raw, err := c.Raw(kind)
	if err == nil {
		return raw, kind, nil
	}
	var derr error
	switch kind {
	case KindQueryGPU:
		raw, derr = c.reportQueryGPU()
	case KindList:
		raw, derr = c.reportList()
	case KindQuery:
		raw, derr = c.Raw(KindQueryXML)
		kind = KindQueryXML
	default:
		return nil, kind, err
	}
	if derr != nil {
		return nil, kind, fmt.Errorf("%w (%v)", err, derr)
	}
	return raw, kind, nil
}
