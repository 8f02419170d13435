// Package capture reads the real nvidia-smi recordings the GPU SIMULATOR
// replays (test/testdata/nvidia-smi, or any files named the same way)
// and replays them as a host with another driver, or another persistence
// mode, would print them. Test tooling only, never shipped; it imports only
// the standard library, so the nvidia-smi stand-in built from it stays small.
package capture

import (
	"encoding/csv"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
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
// columns selected by name from the full recorded CSV. format is nvidia-smi's
// (csv[,noheader][,nounits]).
func (c Capture) QueryGPU(fields []string, format string) (string, error) {
	raw, err := c.Raw(KindQueryGPU)
	if err != nil {
		return "", err
	}
	return queryGPU(c.Prefix, raw, fields, format, nil)
}

// queryGPU selects fields from a recorded CSV; set overrides whole columns.
func queryGPU(name string, raw []byte, fields []string, format string, set map[string]string) (string, error) {
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
	for _, rec := range rows {
		vals := make([]string, len(fields))
		for i, f := range fields {
			v := rec[col[f]]
			if s, ok := set[f]; ok {
				v = s
			}
			if nounits && units[f] != "" {
				v = strings.TrimSuffix(v, " "+units[f])
			}
			vals[i] = v
		}
		b.WriteString(strings.Join(vals, ", ") + "\n")
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

// All lists the captures in dir that have a --query-gpu recording.
func All(dir string) ([]Capture, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*__query-gpu*.csv"))
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []Capture
	for _, f := range files {
		p := f[:strings.Index(f, "__query-gpu")]
		if !seen[p] {
			seen[p] = true
			out = append(out, Capture{Prefix: p})
		}
	}
	return out, nil
}
