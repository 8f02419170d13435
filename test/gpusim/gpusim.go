// Package gpusim is the lab's GPU SIMULATOR. It is test tooling only: nothing
// here ships in the gpukit binary. The lab has no GPUs, so an nvidia-smi
// stand-in (cmd/nvidia-smi) replays output captured from real NVIDIA GPUs
// (../shared/fixtures/nvidia-smi) to exercise gpukit's detection, verify and
// upgrade logic over real SSH.
package gpusim

import (
	"encoding/csv"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Capture is the set of recorded outputs of one real GPU, e.g. the files
// "h100-80gb-hbm3__drv590.48.01__*" of the fixtures folder.
type Capture struct {
	// Prefix is the path up to and including the driver part of the names.
	Prefix string
}

// Driver is the driver version in the capture's file name ("590.48.01").
func (c Capture) Driver() string {
	m := regexp.MustCompile(`__drv([0-9.]+)$`).FindStringSubmatch(c.Prefix)
	if m == nil {
		return ""
	}
	return m[1]
}

func (c Capture) read(kind string) ([]byte, error) {
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

// List is `nvidia-smi -L`.
func (c Capture) List() ([]byte, error) { return c.read("list-L") }

// Table is plain `nvidia-smi`.
func (c Capture) Table() ([]byte, error) { return c.read("table") }

// Query is `nvidia-smi -q`.
func (c Capture) Query() ([]byte, error) { return c.read("q") }

// QueryGPU is `nvidia-smi --query-gpu=FIELDS --format=FORMAT`: the requested
// columns selected by name from the full recorded CSV. format is nvidia-smi's
// (csv[,noheader][,nounits]).
func (c Capture) QueryGPU(fields []string, format string) (string, error) {
	raw, err := c.read("query-gpu")
	if err != nil {
		return "", err
	}
	r := csv.NewReader(strings.NewReader(string(raw)))
	r.TrimLeadingSpace = true
	r.FieldsPerRecord = -1
	header, err := r.Read()
	if err != nil {
		return "", fmt.Errorf("gpusim: %s: %w", c.Prefix, err)
	}
	col := map[string]int{}
	units := map[string]string{}
	for i, h := range header {
		name, unit, _ := strings.Cut(h, " [")
		col[name] = i
		units[name] = strings.TrimSuffix(unit, "]")
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
	for {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", fmt.Errorf("gpusim: %s: %w", c.Prefix, err)
		}
		vals := make([]string, len(fields))
		for i, f := range fields {
			j, ok := col[f]
			if !ok {
				// nvidia-smi's own wording for an unknown field.
				return "", fmt.Errorf("Field \"%s\" is not a valid field to query.", f)
			}
			v := rec[j]
			if nounits && units[f] != "" {
				v = strings.TrimSuffix(v, " "+units[f])
			}
			vals[i] = v
		}
		b.WriteString(strings.Join(vals, ", ") + "\n")
	}
	return b.String(), nil
}

// Captures lists the captures in dir that have a --query-gpu recording.
func Captures(dir string) ([]Capture, error) {
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
