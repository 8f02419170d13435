package preflight

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gpukit/gpukit/pkg/facts"
	"github.com/gpukit/gpukit/test/golden"
)

func sampleReport(n int) Report {
	var rep Report
	for i := 1; i <= n; i++ {
		name := fmt.Sprintf("gpu-%03d", i)
		f := healthy()
		f.Hostname = name
		checks := []Result{{Host: name, Check: "os", Status: Pass, Reason: "Ubuntu 24.04.1 LTS"},
			{Host: name, Check: "time-sync", Status: Warn, Reason: "no time synchronisation service: install chrony"}}
		st := Warn
		if i == 2 {
			f.GPUs = []facts.GPU{{Name: "NVIDIA H100 80GB HBM3", Driver: "590.48.01", MemMiB: 81559}}
			checks = append([]Result{{Host: name, Check: "secure-boot", Status: Fail, Reason: "SecureBoot enabled: ..."}}, checks...)
			st = Fail
		}
		rep.Hosts = append(rep.Hosts, HostReport{Host: name, Address: fmt.Sprintf("10.0.1.%d", i), Status: st, Facts: f, Checks: checks})
	}
	rep.Hosts = append(rep.Hosts, HostReport{Host: "gpu-down", Address: "10.0.9.9", Status: Fail,
		Error: "host gpu-down: phase connect: dial tcp 10.0.9.9:22: i/o timeout"})
	return rep
}

func TestWriteTextGolden(t *testing.T) {
	for _, n := range []int{3, 200} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			var b bytes.Buffer
			if err := WriteText(&b, sampleReport(n), TextOptions{}); err != nil {
				t.Fatal(err)
			}
			golden.Assert(t, filepath.Join("testdata", fmt.Sprintf("report-%d.golden", n)), b.Bytes())
			// One line per shared finding, whatever the host count.
			if got := strings.Count(b.String(), "time-sync"); got != 1 {
				t.Errorf("time-sync finding printed %d times", got)
			}
		})
	}
}

func TestWriteJSON(t *testing.T) {
	var b bytes.Buffer
	if err := WriteJSON(&b, sampleReport(2)); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Type  string       `json:"type"`
		Hosts []HostReport `json:"hosts"`
	}
	if err := json.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if got.Type != "preflight-report" || len(got.Hosts) != 3 || got.Hosts[1].Facts.GPUs[0].Driver != "590.48.01" {
		t.Errorf("%+v", got)
	}
}

// Colour must not shift the columns: every row's status starts under STATUS.
func TestWriteTextColourKeepsColumns(t *testing.T) {
	var b bytes.Buffer
	if err := WriteText(&b, sampleReport(3), TextOptions{Color: true}); err != nil {
		t.Fatal(err)
	}
	strip := regexp.MustCompile("\x1b\\[[0-9;]*m")
	lines := strings.Split(strip.ReplaceAllString(b.String(), ""), "\n")
	col := strings.Index(lines[0], "STATUS")
	for _, l := range lines[1:5] {
		if st := strings.Fields(l[col:])[0]; st != "pass" && st != "warn" && st != "fail" {
			t.Errorf("row %q: %q under STATUS", l, st)
		}
	}
	if !strings.Contains(b.String(), "\x1b[31;1mfail") && !strings.Contains(b.String(), "\x1b[1;31mfail") {
		t.Errorf("no red fail in %q", b.String())
	}
}
