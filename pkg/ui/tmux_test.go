package ui

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpukit/gpukit/pkg/ui/internal/synth"
)

// TestTUIHelperProcess is not a test: the tmux tests run the test binary
// itself in a tmux pane with GPUKIT_TUI_HELPER=1, and this replays a
// synthetic run through the real TTY display on that terminal.
func TestTUIHelperProcess(t *testing.T) {
	if os.Getenv("GPUKIT_TUI_HELPER") != "1" {
		t.Skip("helper process for the tmux tests")
	}
	hosts, _ := strconv.Atoi(os.Getenv("GPUKIT_TUI_HOSTS"))
	unreachable, _ := strconv.Atoi(os.Getenv("GPUKIT_TUI_UNREACHABLE"))
	cfg := synth.Config{
		Hosts: hosts, FailEvery: 23, UnreachableEvery: unreachable, Lines: 2, Wave: 300 * time.Millisecond,
		Hang: os.Getenv("GPUKIT_TUI_HANG") == "1",
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d := New(Decide(os.Stdout, FormatAuto, os.Getenv), WithTitle("gpukit demo"), WithCancel(cancel))
	err := synth.Play(ctx, d, synth.Events(cfg), 1)
	if cerr := d.Close(); cerr != nil {
		fmt.Println("HELPER: display error:", cerr)
		os.Exit(2)
	}
	if err != nil {
		fmt.Println("HELPER:", err)
		os.Exit(130)
	}
	os.Exit(0)
}

// pane is a tmux session on a private server, 120x40.
type pane struct {
	t    *testing.T
	tmux string
	sock string
}

func newPane(t *testing.T, name string, env ...string) *pane {
	t.Helper()
	if testing.Short() {
		t.Skip("real-terminal test skipped in -short mode")
	}
	tmux, err := exec.LookPath("tmux")
	if err != nil {
		t.Skip("tmux is not installed: the real-terminal test of the TTY display needs it (apt-get install tmux)")
	}
	bin, err := filepath.Abs(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	p := &pane{t: t, tmux: tmux, sock: fmt.Sprintf("gpukit-ui-%d-%s-%d", os.Getpid(), name, time.Now().UnixNano())}
	t.Cleanup(func() { _ = exec.Command(tmux, "-L", p.sock, "kill-server").Run() })
	// After the program: its exit status, whether the terminal is back in
	// cooked mode, then stay so the pane can be read.
	script := fmt.Sprintf("env %s GPUKIT_TUI_HELPER=1 '%s' -test.run='^TestTUIHelperProcess$'; "+
		"echo EXIT:$?; if stty -a | grep -q -- '-icanon'; then echo TTY:raw; else echo TTY:cooked; fi; sleep 600",
		strings.Join(env, " "), bin)
	p.run("new-session", "-d", "-x", "120", "-y", "40", script)
	return p
}

func (p *pane) run(args ...string) string {
	p.t.Helper()
	out, err := exec.Command(p.tmux, append([]string{"-L", p.sock}, args...)...).CombinedOutput()
	if err != nil {
		p.t.Fatalf("tmux %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// screen is what the pane shows now; with history, also what scrolled off.
func (p *pane) screen(history bool) string {
	if history {
		return p.run("capture-pane", "-p", "-S", "-1000")
	}
	return p.run("capture-pane", "-p")
}

// waitFor polls the pane until every want is on it (the generous timeout is
// for loaded CI machines, not a performance bound).
func (p *pane) waitFor(history bool, want ...string) string {
	p.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		s := p.screen(history)
		missing := ""
		for _, w := range want {
			if !strings.Contains(s, w) {
				missing = w
				break
			}
		}
		if missing == "" {
			return s
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("pane never showed %q:\n%s", missing, s)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestTTYUnderTmux(t *testing.T) {
	t.Parallel()
	// Two hosts are unreachable, so failures are on screen from the first
	// phase on and the live checks do not depend on catching one phase on a
	// loaded machine.
	p := newPane(t, "run", "GPUKIT_TUI_HOSTS=200", "GPUKIT_TUI_UNREACHABLE=67")
	live := p.waitFor(false, "▶ ", "Working (", "Failed (", "running", "ctrl+c to cancel")
	for _, w := range []string{"gpukit init  200 hosts", "connect", "█", "✗ gpu-0"} {
		if !strings.Contains(live, w) {
			t.Errorf("live view lacks %q:\n%s", w, live)
		}
	}
	if n := len(strings.Split(strings.TrimRight(live, "\n"), "\n")); n > 40 {
		t.Errorf("live view is %d lines on a 40-line terminal", n)
	}
	end := p.waitFor(true, "EXIT:", "TTY:")
	for _, w := range []string{
		"EXIT:0", "TTY:cooked",
		"✓ runtime/toolkit", // the final view stays on screen
		"gpukit init failed: 190 ok, 10 failed", "Failed hosts (10):",
		"gpu-0134  connect  dial tcp 10.0.0.134:22: connect: connection refused",
		"gpu-0023  nvidia/driver  install driver: exit status 100", "| E: Unable to locate package",
		"Logs: /var/log/gpukit/",
	} {
		if !strings.Contains(end, w) {
			t.Errorf("after the run the terminal lacks %q:\n%s", w, end)
		}
	}
	if strings.Contains(end, "ctrl+c to cancel\nEXIT") {
		t.Error("the live footer was left on screen")
	}
	if cursor := strings.TrimSpace(p.run("display-message", "-p", "#{cursor_flag}")); cursor != "1" {
		t.Errorf("cursor left hidden (cursor_flag %q)", cursor)
	}
}

func TestTTYCtrlCUnderTmux(t *testing.T) {
	t.Parallel()
	p := newPane(t, "cancel", "GPUKIT_TUI_HOSTS=50", "GPUKIT_TUI_HANG=1")
	p.waitFor(false, "▶ runtime/toolkit", "Working (")
	p.run("send-keys", "C-c")
	end := p.waitFor(true, "EXIT:", "TTY:")
	for _, w := range []string{"EXIT:130", "TTY:cooked", "HELPER: context canceled", "gpukit init cancelled:"} {
		if !strings.Contains(end, w) {
			t.Errorf("after ctrl+c the terminal lacks %q:\n%s", w, end)
		}
	}
}
