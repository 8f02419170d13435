package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gpukit/gpukit/internal/cli"
	"github.com/gpukit/gpukit/pkg/preflight"
	"github.com/gpukit/gpukit/pkg/ssh"
	"github.com/gpukit/gpukit/test/gpusim"
	"github.com/gpukit/gpukit/test/lab"
)

// preflightJSON runs `gpukit preflight -o json` in-process and returns the
// exit code, the report and the raw output.
func preflightJSON(t *testing.T, inv string, extra ...string) (int, preflight.Report, string) {
	t.Helper()
	var out, errb bytes.Buffer
	args := append([]string{"preflight", "-i", inv, "-o", "json", "--log-dir", t.TempDir()}, extra...)
	code := cli.Execute(context.Background(), args, cli.Streams{In: strings.NewReader(""), Out: &out, Err: &errb})
	var rep preflight.Report
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if strings.Contains(line, `"type":"preflight-report"`) {
			if err := json.Unmarshal([]byte(line), &rep); err != nil {
				t.Fatalf("report: %v", err)
			}
		}
	}
	if len(rep.Hosts) == 0 {
		t.Fatalf("no report (exit %d)\nstdout: %s\nstderr: %s", code, out.String(), errb.String())
	}
	return code, rep, out.String() + errb.String()
}

func hostReport(t *testing.T, rep preflight.Report, name string) preflight.HostReport {
	t.Helper()
	for _, h := range rep.Hosts {
		if h.Host == name {
			return h
		}
	}
	t.Fatalf("no host %s in the report", name)
	return preflight.HostReport{}
}

// installGPUSimulator puts the labelled nvidia-smi stand-in and a real
// capture on a lab host, through gpukit's own transport (SFTP + install).
func installGPUSimulator(t *testing.T, l *lab.Lab, host lab.Host, capture gpusim.Capture) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	bin, err := gpusim.BuildNvidiaSMI(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	c, err := ssh.Dial(ctx, ssh.Config{Name: host.Name, Address: host.Address, User: "deploy",
		KeyFile: l.KeyFile, KnownHostsFile: l.KnownHosts})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := gpusim.Install(ctx, c, capture, bin); err != nil {
		t.Fatal(err)
	}
}

func TestLabPreflight(t *testing.T) {
	lab.Require(t)
	h100 := labCapture(t, "h100-80gb-hbm3__drv590.48.01")
	l := lab.Start(t, lab.Options{Hosts: 3})
	installGPUSimulator(t, l, l.Hosts[1], h100)

	code, rep, out := preflightJSON(t, l.Inventory)
	if code != cli.ExitOK {
		t.Fatalf("exit %d, want 0 (warnings only)\n%s", code, out)
	}
	for _, h := range rep.Hosts {
		f := h.Facts
		if f == nil || f.OS.ID != "debian" || f.OS.Version != "12" || f.Init != "systemd" || f.CPUs < 1 {
			t.Errorf("%s: facts %+v", h.Host, f)
		}
		if h.Status == preflight.Fail {
			t.Errorf("%s failed: %+v", h.Host, h.Checks)
		}
	}
	gpuHost := hostReport(t, rep, l.Hosts[1].Name)
	if g := gpuHost.Facts.GPUs; len(g) != 1 || g[0].Name != "NVIDIA H100 80GB HBM3" || g[0].Driver != "590.48.01" {
		t.Errorf("simulated H100 seen as %+v", g)
	}
	// The inventory asks for the default 580 driver: preflight says init will change it.
	var gpuCheck preflight.Result
	for _, c := range gpuHost.Checks {
		if c.Check == "gpu" {
			gpuCheck = c
		}
	}
	if gpuCheck.Status != preflight.Warn || !strings.Contains(gpuCheck.Reason, "init will change the driver") {
		t.Errorf("gpu check on the simulated H100: %+v", gpuCheck)
	}

	// One host down: named as failed, the others still fully probed, exit 3.
	l.Stop(t, l.Hosts[2].Name)
	start := time.Now()
	code, rep, out = preflightJSON(t, l.Inventory)
	if code != cli.ExitHostsFailed {
		t.Fatalf("exit %d with a host down, want %d\n%s", code, cli.ExitHostsFailed, out)
	}
	down := hostReport(t, rep, l.Hosts[2].Name)
	if down.Status != preflight.Fail || !strings.Contains(down.Error, "connect") || down.Facts != nil {
		t.Errorf("stopped host reported as %+v", down)
	}
	for _, h := range rep.Hosts[:2] {
		if h.Facts == nil || h.Status == preflight.Fail {
			t.Errorf("%s not probed while another host was down: %+v", h.Host, h)
		}
	}
	t.Logf("preflight with one host down took %s", time.Since(start).Round(time.Millisecond))
}

// A non-root user with password authentication and sudo with a password:
// facts need root, and the password never shows in output or logs.
func TestLabPreflightPasswordSudo(t *testing.T) {
	lab.Require(t)
	l := lab.Start(t, lab.Options{Hosts: 2})
	raw, err := os.ReadFile(l.Inventory)
	if err != nil {
		t.Fatal(err)
	}
	ssh := "  ssh:\n    user: ops\n    password: {env: GPUKIT_TEST_OPS_PASSWORD}\n    knownHostsFile: " + l.KnownHosts +
		"\n    sudo:\n      password: {env: GPUKIT_TEST_OPS_PASSWORD}\n"
	inv := regexp.MustCompile(`(?ms)^  ssh:\n(    .*?\n)+`).ReplaceAllString(string(raw), ssh)
	if !strings.Contains(inv, "user: ops") {
		t.Fatalf("could not rewrite the lab inventory:\n%s", raw)
	}
	path := filepath.Join(t.TempDir(), "ops.yaml")
	if err := os.WriteFile(path, []byte(inv), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GPUKIT_TEST_OPS_PASSWORD", l.SudoPassword)
	logs := t.TempDir()
	code, rep, out := preflightJSON(t, path, "--log-dir", logs)
	if code != cli.ExitOK {
		t.Fatalf("exit %d\n%s", code, out)
	}
	for _, h := range rep.Hosts {
		// product_uuid and machine-id are read as root: a sudo that did not
		// take would leave the probe failing or unprivileged.
		if h.Facts == nil || h.Facts.MachineID == "" {
			t.Errorf("%s: no facts as root: %+v", h.Host, h)
		}
	}
	if strings.Contains(out, l.SudoPassword) {
		t.Error("the password appears in gpukit's output")
	}
	_ = filepath.Walk(logs, func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			if b, _ := os.ReadFile(p); bytes.Contains(b, []byte(l.SudoPassword)) {
				t.Errorf("the password appears in log %s", p)
			}
		}
		return nil
	})
}

// Every host reached through one bastion (the first lab host), whose
// connection the hosts share.
func TestLabPreflightThroughBastion(t *testing.T) {
	lab.Require(t)
	l := lab.Start(t, lab.Options{Hosts: 3})
	raw, err := os.ReadFile(l.Inventory)
	if err != nil {
		t.Fatal(err)
	}
	bastion := "  ssh:\n    bastion:\n      address: " + l.Hosts[0].Address + "\n      user: root\n"
	inv := strings.Replace(string(raw), "  ssh:\n", bastion, 1)
	path := filepath.Join(t.TempDir(), "bastion.yaml")
	if err := os.WriteFile(path, []byte(inv), 0o600); err != nil {
		t.Fatal(err)
	}
	code, rep, out := preflightJSON(t, path)
	if code != cli.ExitOK {
		t.Fatalf("exit %d\n%s", code, out)
	}
	for _, h := range rep.Hosts {
		if h.Facts == nil {
			t.Errorf("%s not probed through the bastion", h.Host)
		}
	}
	// With the bastion down every host behind it fails, naming the bastion.
	l.Stop(t, l.Hosts[0].Name)
	code, rep, out = preflightJSON(t, path)
	if code != cli.ExitHostsFailed {
		t.Fatalf("exit %d with the bastion down\n%s", code, out)
	}
	for _, h := range rep.Hosts {
		if h.Status != preflight.Fail || !strings.Contains(h.Error, "bastion "+l.Hosts[0].Address) {
			t.Errorf("%s: %s %q", h.Host, h.Status, h.Error)
		}
	}
}

// The real binary on a real terminal (tmux) against real hosts: the live
// view draws its phase bars, then the report table follows.
func TestLabPreflightTTY(t *testing.T) {
	lab.Require(t)
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux not installed (hack/install-deps.sh installs it)")
	}
	l := lab.Start(t, lab.Options{Hosts: 3})
	bin := filepath.Join(t.TempDir(), "gpukit")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/gpukit/gpukit/cmd/gpukit").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	session := fmt.Sprintf("gpukit-tty-%d", os.Getpid())
	cmd := fmt.Sprintf("%s preflight -i %s --log-dir %s; echo EXIT=$?; sleep 60", bin, l.Inventory, t.TempDir())
	if out, err := exec.Command("tmux", "new-session", "-d", "-s", session, "-x", "120", "-y", "40", cmd).CombinedOutput(); err != nil {
		t.Fatalf("tmux: %v\n%s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("tmux", "kill-session", "-t", session).Run() })
	var screen string
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		out, err := exec.Command("tmux", "capture-pane", "-p", "-t", session).Output()
		if err != nil {
			t.Fatalf("capture-pane: %v", err)
		}
		if screen = string(out); strings.Contains(screen, "EXIT=") {
			break
		}
	}
	for _, want := range []string{"gpukit preflight", "✓ preflight/facts", "3/3", "HOST", "lab-1", "Debian GNU/Linux 12", "3 host(s):", "EXIT=0"} {
		if !strings.Contains(screen, want) {
			t.Errorf("screen lacks %q:\n%s", want, screen)
		}
	}
}
