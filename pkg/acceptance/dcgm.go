// Package acceptance reads and judges a GPU node's acceptance tests: NVIDIA
// DCGM's diagnostics (`dcgmi diag`) and NCCL's bandwidth (nccl-tests'
// all_reduce_perf), as their tools print them, against thresholds. A test
// that did not run is NotRun, never Passed.
package acceptance

import (
	"fmt"
	"regexp"
	"strings"
)

// Status is a test's verdict.
type Status string

const (
	Passed  Status = "passed"
	Warning Status = "warning"
	Failed  Status = "failed"
	// NotRun: the test could not run (no DCGM, one node): said so, never
	// counted as passed.
	NotRun Status = "not run"
)

// DiagTest is one row of a DCGM diagnostic.
type DiagTest struct {
	Category string `json:"category"` // Deployment, Integration, Hardware, Stress
	Name     string `json:"name"`
	// Result as DCGM writes it: Pass, Fail, Warn, Skip, "Pass - All",
	// "Fail - GPU: 0, 1"...
	Result string `json:"result"`
}

// Diag is a `dcgmi diag` result.
type Diag struct {
	Version string     `json:"version,omitempty"`
	Driver  string     `json:"driver,omitempty"`
	Devices []string   `json:"devices,omitempty"`
	Tests   []DiagTest `json:"tests"`
	// Complete: the table closed (a cut-off run is not a pass).
	Complete bool `json:"complete"`
}

var diagRow = regexp.MustCompile(`^\|\s*(.*?)\s*\|\s*(.*?)\s*\|$`)
var diagSection = regexp.MustCompile(`^[|+]-+\s+(\w[\w ]*?)\s+-+\+`)

// ParseDCGMDiag reads the text table of `dcgmi diag -r N`: the metadata
// (DCGM 3.x and later), then each category's tests and results. A result
// row may continue on the next (an error's detail): those lines join the
// test's result.
func ParseDCGMDiag(out string) (Diag, error) {
	var d Diag
	category, started := "", false
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimRight(line, " \r")
		switch {
		case strings.HasPrefix(line, "+====="):
			started = true
			continue
		case !started:
			continue
		}
		if m := diagSection.FindStringSubmatch(line); m != nil {
			category = m[1]
			continue
		}
		if strings.HasPrefix(line, "+----") {
			d.Complete = true // the closing border (a section's opens with its name)
			continue
		}
		m := diagRow.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		name, value := m[1], m[2]
		switch {
		case category == "Metadata":
			switch name {
			case "DCGM Version":
				d.Version = value
			case "Driver Version Detected":
				d.Driver = value
			case "GPU Device IDs Detected":
				d.Devices = strings.Split(value, ",")
			}
		case name == "" && len(d.Tests) > 0:
			last := &d.Tests[len(d.Tests)-1]
			last.Result = strings.TrimSpace(last.Result + " " + value)
		case name != "":
			d.Tests = append(d.Tests, DiagTest{Category: category, Name: name, Result: value})
		}
	}
	if !started {
		return d, fmt.Errorf("dcgmi diag: no result table in %q", firstLine(out))
	}
	if len(d.Tests) == 0 {
		return d, fmt.Errorf("dcgmi diag: a result table without tests")
	}
	return d, nil
}

// Verdict judges the diagnostic: failed when a test failed (naming them),
// warning when one warned, not run when the table was cut off before its
// end, passed otherwise (skipped tests are listed, not failed).
func (d Diag) Verdict() (Status, []string) {
	var failed, warned, skipped []string
	for _, t := range d.Tests {
		r := strings.ToLower(t.Result)
		label := t.Category + "/" + t.Name + ": " + t.Result
		switch {
		case strings.HasPrefix(r, "fail"):
			failed = append(failed, label)
		case strings.HasPrefix(r, "warn"):
			warned = append(warned, label)
		case strings.HasPrefix(r, "skip"):
			skipped = append(skipped, label)
		}
	}
	switch {
	case len(failed) > 0:
		return Failed, failed
	case !d.Complete:
		return NotRun, []string{"the diagnostic's report ends before its table does"}
	case len(warned) > 0:
		return Warning, warned
	}
	return Passed, skipped
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}
