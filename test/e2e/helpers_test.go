package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpukit/gpukit/internal/cli"
	"github.com/gpukit/gpukit/test/gpusim"
	"github.com/gpukit/gpukit/test/lab"
)

// run executes the gpukit command line in-process, as a user would run it.
func run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = cli.Execute(context.Background(), args, cli.Streams{In: strings.NewReader(""), Out: &out, Err: &errb})
	return code, out.String(), errb.String()
}

// writeFile writes content to name in a fresh temporary directory.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// labCapture is the fixtures' capture called name (h100-80gb-hbm3__drv590.48.01),
// which the GPU simulator stands up; the test is skipped without it.
func labCapture(t *testing.T, name string) gpusim.Capture {
	t.Helper()
	captures, err := gpusim.Captures(gpusim.FixturesDir(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range captures {
		if filepath.Base(c.Prefix) == name {
			return c
		}
	}
	t.Skipf("no %s capture among the fixtures", name)
	return gpusim.Capture{}
}

// gpuLab is a lab of full hosts lab-1..N with the simulated hardware hw
// (by host name), each host's reboot a second long and Debian's packages
// from the lab's mirror. It returns the lab, the hosts in order and the
// lab inventory's text with the stand-in NVIDIA repositories.
func gpuLab(t *testing.T, hw map[string]gpusim.Hardware) (*lab.Lab, []string, string) {
	t.Helper()
	l := lab.Start(t, lab.Options{Hosts: len(hw)})
	var hosts []string
	for i := range len(hw) {
		hosts = append(hosts, fmt.Sprintf("lab-%d", i+1))
	}
	repo := gpusim.Simulate(t, l, hw)
	base, err := repo.Inventory(l, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(base)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hosts {
		l.SetRebootDelay(t, h, time.Second)
		l.UseDebianMirror(t, h)
	}
	return l, hosts, string(raw)
}
