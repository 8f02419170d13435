// Package capture reads the real nvidia-smi recordings the GPU SIMULATOR
// replays (test/testdata/nvidia-smi, or any files named the same way)
// and replays them as a host with another driver, or another persistence
// mode, would print them. A capture may be a single report (-q -x or -q):
// the other answers are derived from it (report.go). Which GPUs a driver
// drives is pkg/compat's table (driven.go). Test tooling only, never
// shipped; besides the standard library it imports only pkg/compat, so the
// nvidia-smi stand-in built from it stays small.
package capture

import (
	"encoding/csv"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// Capture is the set of recorded outputs of one real machine, e.g. the
// files "h100-80gb-hbm3__drv590.48.01__*" of the fixtures folder.
type Capture struct {
	// Prefix is the path up to and including the driver part of the names
	// (any directory: /some/where/h100-80gb-hbm3__drv590.48.01).
	Prefix string
}

// Kinds of recordings (the part of the file name after the prefix).
const (
	KindList     = "list-L"    // nvidia-smi -L
	KindTable    = "table"     // nvidia-smi
	KindQuery    = "q"         // nvidia-smi -q
	KindQueryXML = "q-x"       // nvidia-smi -q -x
	KindQueryGPU = "query-gpu" // nvidia-smi --query-gpu=... --format=csv
)

// Driver is the driver version in the capture's file name ("590.48.01").
func (c Capture) Driver() string {
	m := regexp.MustCompile(`__drv([0-9.]+)$`).FindStringSubmatch(c.Prefix)
	if m == nil {
		return ""
	}
	return m[1]
}

// Files are the capture's recordings on this machine.
func (c Capture) Files() ([]string, error) {
	files, err := filepath.Glob(c.Prefix + "__*")
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("capture %s: no recordings found", c.Prefix)
	}
	return files, nil
}

// Raw is the recording of one kind: the idle one where there are several.
func (c Capture) Raw(kind string) ([]byte, error) {
	for _, suffix := range []string{"-idle", "", "-load"} {
		for _, ext := range []string{".txt", ".csv", ".xml"} {
			b, err := os.ReadFile(c.Prefix + "__" + kind + suffix + ext)
			if err == nil {
				return b, nil
			}
		}
	}
	return nil, fmt.Errorf("gpusim: capture %s has no %q output", filepath.Base(c.Prefix), kind)
}

// Query is `nvidia-smi -q`.
func (c Capture) Query() ([]byte, error) { return c.Raw(KindQuery) }

// QueryGPU is `nvidia-smi --query-gpu=FIELDS --format=FORMAT`: the requested
// columns selected by name from the full recorded CSV, or from the one a
// capture recorded only as a report answers (report.go). format is
// nvidia-smi's (csv[,noheader][,nounits]).
func (c Capture) QueryGPU(fields []string, format string) (string, error) {
	raw, _, err := c.output(KindQueryGPU)
	if err != nil {
		return "", err
	}
	return queryGPU(c.Prefix, raw, fields, format, nil, nil)
}

// queryGPU selects fields from a recorded CSV; set overrides whole columns;
// hide, where not nil, leaves out the rows of the GPUs at the bus ids it
// names, the others numbered again from 0 (what the driver does not drive,
// nvidia-smi does not list).
func queryGPU(name string, raw []byte, fields []string, format string, set map[string]string, hide func(bus string) bool) (string, error) {
	header, rows, err := readCSV(raw)
	if err != nil {
		return "", fmt.Errorf("gpusim: %s: %w", name, err)
	}
	col := map[string]int{}
	units := map[string]string{}
	for i, h := range header {
		name, unit, _ := strings.Cut(h, " [")
		col[name] = i
		units[name] = strings.TrimSuffix(unit, "]")
	}
	for _, f := range fields {
		if _, ok := col[f]; !ok {
			// nvidia-smi's own wording for an unknown field.
			return "", fmt.Errorf("Field \"%s\" is not a valid field to query.", f)
		}
	}
	noheader := strings.Contains(format, "noheader")
	nounits := strings.Contains(format, "nounits")
	var b strings.Builder
	if !noheader {
		hs := make([]string, len(fields))
		for i, f := range fields {
			hs[i] = f
			if u := units[f]; u != "" && !nounits {
				hs[i] += " [" + u + "]"
			}
		}
		b.WriteString(strings.Join(hs, ", ") + "\n")
	}
	n := 0
	for _, rec := range rows {
		if i, ok := col["pci.bus_id"]; ok && hide != nil && hide(rec[i]) {
			continue
		}
		vals := make([]string, len(fields))
		for i, f := range fields {
			v := rec[col[f]]
			if s, ok := set[f]; ok {
				v = s
			}
			if f == "index" && hide != nil {
				v = strconv.Itoa(n)
			}
			if nounits && units[f] != "" {
				v = strings.TrimSuffix(v, " "+units[f])
			}
			vals[i] = v
		}
		b.WriteString(strings.Join(vals, ", ") + "\n")
		n++
	}
	return b.String(), nil
}

func readCSV(raw []byte) (header []string, rows [][]string, err error) {
	r := csv.NewReader(strings.NewReader(string(raw)))
	r.TrimLeadingSpace = true
	r.FieldsPerRecord = -1
	header, err = r.Read()
	if err != nil {
		return nil, nil, err
	}
	for {
		rec, err := r.Read()
		if err == io.EOF {
			return header, rows, nil
		}
		if err != nil {
			return nil, nil, err
		}
		for len(rec) < len(header) {
			rec = append(rec, "")
		}
		rows = append(rows, rec)
	}
}

// recording names the files that stand a GPU model up: a --query-gpu
// recording, or a report (-q, -q -x) alone; the capture's prefix is the
// first group.
var recording = regexp.MustCompile(`^(.+__drv[0-9.]+)__(query-gpu(-idle|-load)?\.csv|q(-idle|-load)?\.txt|q-x(-idle|-load)?\.xml)$`)

// All lists the captures in dir that stand a GPU model up: those with a
// --query-gpu recording, and those recorded only as a -q -x or -q report
// (most public reports are only that).
func All(dir string) ([]Capture, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*__*"))
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []Capture
	for _, f := range files {
		m := recording.FindStringSubmatch(f)
		if m != nil && !seen[m[1]] {
			seen[m[1]] = true
			out = append(out, Capture{Prefix: m[1]})
		}
	}
	return out, nil
}
