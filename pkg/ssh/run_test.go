package ssh

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpukit/gpukit/pkg/redact"
)

func TestArgsArriveIntact(t *testing.T) {
	t.Parallel()
	env := newEnv(t, serverOptions{})
	c := dialT(t, env.cfg)
	args := []string{
		"plain", "with space", "  leading and trailing  ", `it's "quoted"`, "$HOME $(id) `id` ${x}",
		"line1\nline2", "trailing newline\n", "", "*", "-n", "--", "tab\there", `back\slash\`, "ünïcødé ✓",
		"gpukit-00000000000000000000000000000000", "#not a comment", "; rm -rf / ;",
	}
	res := runT(t, c, Command{Name: "args", Script: `printf '%s\0' "$#" "$@"`, Args: args})
	got := strings.Split(strings.TrimSuffix(string(res.Stdout), "\x00"), "\x00")
	want := append([]string{fmt.Sprint(len(args))}, args...)
	if len(got) != len(want) {
		t.Fatalf("got %d fields %q, want %q", len(got), got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("field %d: got %q, want %q", i, got[i], want[i])
		}
	}
	// No arguments at all; and a script without a final newline.
	res = runT(t, c, Command{Script: `echo "n=$#"`})
	if string(res.Stdout) != "n=0\n" {
		t.Fatalf("got %q", res.Stdout)
	}
	if _, err := c.Run(context.Background(), Command{Script: "true", Args: []string{"a\x00b"}}); err == nil {
		t.Fatal("NUL in an argument must be refused")
	}
}

// Arguments carry secrets (join configurations, certificate keys): the
// script gets them, and no process's command line shows them to the other
// users of the host (/proc/PID/cmdline is world-readable).
func TestArgsAreNoProcessArguments(t *testing.T) {
	t.Parallel()
	env := newEnv(t, serverOptions{})
	c := dialT(t, env.cfg)
	const secret = "gpukit-canary-4b1d9e0f"
	res := runT(t, c, Command{Name: "args", Args: []string{"token: " + secret, "two"},
		Script: `echo "$1|$2|$#"; for p in /proc/[0-9]*/cmdline; do tr '\0' ' ' <"$p" 2>/dev/null; echo; done`})
	out := string(res.Stdout)
	first, rest, _ := strings.Cut(out, "\n")
	if first != "token: "+secret+"|two|2" {
		t.Errorf("the script got %q", first)
	}
	if strings.Contains(rest, secret) {
		for _, line := range strings.Split(rest, "\n") {
			if strings.Contains(line, secret) {
				t.Errorf("a command line shows the argument: %q", line)
			}
		}
	}
	if !strings.Contains(rest, "__gpukit_script") {
		t.Errorf("the runner's own command line is not among those read:\n%s", rest)
	}
}

func TestScriptIsReadWhole(t *testing.T) {
	t.Parallel()
	env := newEnv(t, serverOptions{})
	c := dialT(t, env.cfg)
	// A command reading stdin must not swallow the rest of the script.
	res := runT(t, c, Command{Script: "set -e\nread -r x || true\necho \"x=[${x:-}]\"\ncat\necho after\n"})
	if string(res.Stdout) != "x=[]\nafter\n" {
		t.Fatalf("got %q", res.Stdout)
	}
	// Big scripts, and scripts mentioning the framing.
	var b strings.Builder
	for i := range 5000 {
		fmt.Fprintf(&b, "x%d=%d # gpukit-marker-lookalike \\0 %%s\n", i, i)
	}
	b.WriteString("echo \"$x4999\"")
	res = runT(t, c, Command{Script: b.String()})
	if string(res.Stdout) != "4999\n" {
		t.Fatalf("got %q", res.Stdout)
	}
}

// The script's length is in bytes: a login shell with a UTF-8 locale must
// still read exactly that many (bash's read -N counts characters there).
func TestScriptLengthIsBytesUnderUTF8(t *testing.T) {
	t.Parallel()
	env := newEnv(t, serverOptions{env: []string{"LC_ALL=C.UTF-8", "LANG=C.UTF-8"}})
	c := dialT(t, env.cfg)
	res := runT(t, c, Command{Script: "printf '%s\\n' 'é€ ü 漢字'\necho \"$1\"\necho \"${LC_ALL-unset}\"", Args: []string{"ß"}})
	// The script still gets the login's locale.
	if string(res.Stdout) != "é€ ü 漢字\nß\nC.UTF-8\n" {
		t.Fatalf("got %q", res.Stdout)
	}
}

func TestExitCodeAndStderrTail(t *testing.T) {
	t.Parallel()
	env := newEnv(t, serverOptions{})
	c := dialT(t, env.cfg)
	res, err := c.Run(context.Background(), Command{Name: "install driver",
		Script: "for i in $(seq 1 30); do echo \"err $i\" >&2; done; echo out; exit 3"})
	var ee *ExitError
	if !errors.As(err, &ee) || IsRetryable(err) {
		t.Fatalf("want *ExitError, got %T %v", err, err)
	}
	if ee.Code != 3 || res.ExitCode != 3 || ee.Command != "install driver" || string(res.Stdout) != "out\n" {
		t.Fatalf("got %+v %+v", ee, res)
	}
	lines := strings.Split(ee.StderrTail, "\n")
	if len(lines) != 20 || lines[0] != "err 11" || lines[19] != "err 30" {
		t.Fatalf("tail: %q", ee.StderrTail)
	}
	if !strings.Contains(err.Error(), "install driver: exit status 3: err 11") {
		t.Fatalf("message: %v", err)
	}

	// Long lines: the tail is bounded in bytes.
	_, err = c.Run(context.Background(), Command{Script: "head -c 100000 /dev/zero | tr '\\0' x >&2; echo >&2; echo last >&2; exit 1"})
	if !errors.As(err, &ee) || len(ee.StderrTail) > 2048 || !strings.HasSuffix(ee.StderrTail, "last") {
		t.Fatalf("tail of %d bytes: %v", len(ee.StderrTail), err)
	}

	// The script killed by a signal: bash's 128+n. (The script is a subshell
	// of the runner: $BASHPID is the script, $$ the runner.)
	_, err = c.Run(context.Background(), Command{Script: "kill -TERM $BASHPID"})
	if !errors.As(err, &ee) || ee.Code != 143 {
		t.Fatalf("got %v", err)
	}
	// The remote command itself killed: the host reports the signal.
	res, err = c.Run(context.Background(), Command{Script: "kill -KILL $$; sleep 1"})
	if !errors.As(err, &ee) || ee.Signal != "KILL" || ee.Code != 137 || res.ExitCode != 137 ||
		!strings.Contains(err.Error(), "killed by signal KILL") {
		t.Fatalf("got %T %v", err, err)
	}
}

func TestStreamingAndCapture(t *testing.T) {
	t.Parallel()
	env := newEnv(t, serverOptions{})
	c := dialT(t, env.cfg)

	// Output reaches the writer while the command still runs.
	first := make(chan struct{})
	w := &notifyWriter{on: "first", ch: first}
	done := make(chan error, 1)
	go func() {
		_, err := c.Run(context.Background(), Command{Script: "echo first; read -t 3 <> <(:) || true; echo second", Stdout: w})
		done <- err
	}()
	select {
	case <-first:
	case <-time.After(2 * time.Second):
		t.Fatal("first line not streamed before the command ended")
	}
	select {
	case <-done:
		t.Fatal("command ended too early for the streaming check")
	default:
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := w.String(); got != "first\nsecond\n" {
		t.Fatalf("streamed %q", got)
	}

	// Capture stops at MaxCapture; the stream gets everything.
	var n countWriter
	res := runT(t, c, Command{Script: "head -c 5000000 /dev/zero", Stdout: &n})
	if len(res.Stdout) != MaxCapture || n.n.Load() != 5000000 {
		t.Fatalf("captured %d, streamed %d", len(res.Stdout), n.n.Load())
	}
}

type notifyWriter struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	on   string
	ch   chan struct{}
	once sync.Once
}

func (w *notifyWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if strings.Contains(w.buf.String(), w.on) {
		w.once.Do(func() { close(w.ch) })
	}
	return len(p), nil
}

func (w *notifyWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

type countWriter struct{ n atomic.Int64 }

func (w *countWriter) Write(p []byte) (int, error) { w.n.Add(int64(len(p))); return len(p), nil }

// pgrepGone waits until no process matches pattern.
func pgrepGone(t *testing.T, pattern string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		out, err := exec.Command("pgrep", "-af", pattern).Output()
		if err != nil { // exit 1: none
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes still running %s after cancel:\n%s", within, out)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestCancelKillsRemoteProcesses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		user string
		sudo bool
		opts serverOptions
	}{
		{"plain", "root", false, serverOptions{}},
		{"sudo with password", "ops", true, serverOptions{sudoPassword: canarySudo}},
		{"traps TERM", "root", false, serverOptions{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			env := newEnv(t, tc.opts)
			env.cfg.User = tc.user
			env.cfg.SudoPassword = tc.opts.sudoPassword
			c := dialT(t, env.cfg)
			// Unique durations name this test's processes for pgrep.
			d := fmt.Sprintf("%d.%03d", 300+time.Now().Nanosecond()%1000, len(tc.name))
			script := fmt.Sprintf("sleep %s & sleep %s; echo never", d, d)
			if tc.name == "traps TERM" {
				script = "trap '' TERM; " + script
			}
			// Cancel once the remote processes are seen running.
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			cancelled := make(chan time.Time, 1)
			go func() {
				deadline := time.Now().Add(10 * time.Second)
				for exec.Command("pgrep", "-f", "sleep "+d).Run() != nil && time.Now().Before(deadline) {
					time.Sleep(20 * time.Millisecond)
				}
				cancelled <- time.Now()
				cancel()
			}()
			_, err := c.Run(ctx, Command{Name: "long", Script: script, Sudo: tc.sudo})
			returned := time.Now()
			if !errors.Is(err, context.Canceled) || IsRetryable(err) {
				t.Fatalf("got %v", err)
			}
			if el := returned.Sub(<-cancelled); el > 30*time.Second { // the script sleeps far longer: a hang, not a speed bound
				t.Fatalf("Run returned %s after cancel", el)
			}
			pgrepGone(t, "sleep "+d, 6*time.Second)
			// The connection is still good.
			runT(t, c, Command{Script: "true", Sudo: tc.sudo})
		})
	}
}

func TestSudo(t *testing.T) {
	t.Parallel()
	const probe = `echo "sudo=${GPUKIT_FAKE_SUDO:-0}"; cat; echo "$1"`
	check := func(t *testing.T, res Result, want string) {
		t.Helper()
		if got := string(res.Stdout); got != want {
			t.Fatalf("stdout %q, want %q", got, want)
		}
		for _, b := range [][]byte{res.Stdout, res.Stderr} {
			if bytes.Contains(b, []byte(canarySudo)) {
				t.Fatalf("sudo password in output: %q", b)
			}
		}
	}
	t.Run("password", func(t *testing.T) {
		t.Parallel()
		env := newEnv(t, serverOptions{sudoPassword: canarySudo})
		env.cfg.User, env.cfg.SudoPassword = "ops", canarySudo
		c := dialT(t, env.cfg)
		check(t, runT(t, c, Command{Script: probe, Args: []string{"arg"}, Sudo: true}), "sudo=1\narg\n")
		check(t, runT(t, c, Command{Script: probe, Args: []string{"arg"}}), "sudo=0\narg\n")
	})
	t.Run("password given, NOPASSWD rule", func(t *testing.T) {
		t.Parallel()
		env := newEnv(t, serverOptions{})
		env.cfg.User, env.cfg.SudoPassword = "ops", canarySudo
		c := dialT(t, env.cfg)
		check(t, runT(t, c, Command{Script: probe, Args: []string{"arg"}, Sudo: true}), "sudo=1\narg\n")
	})
	t.Run("NOPASSWD", func(t *testing.T) {
		t.Parallel()
		env := newEnv(t, serverOptions{})
		env.cfg.User = "deploy"
		c := dialT(t, env.cfg)
		check(t, runT(t, c, Command{Script: probe, Args: []string{"arg"}, Sudo: true}), "sudo=1\narg\n")
	})
	t.Run("root needs no sudo", func(t *testing.T) {
		t.Parallel()
		env := newEnv(t, serverOptions{brokenSudo: true})
		c := dialT(t, env.cfg)
		check(t, runT(t, c, Command{Script: probe, Args: []string{"arg"}, Sudo: true}), "sudo=0\narg\n")
	})
	t.Run("sudo never: a root-equivalent user", func(t *testing.T) {
		t.Parallel()
		env := newEnv(t, serverOptions{brokenSudo: true})
		env.cfg.User, env.cfg.Sudo = "toor", SudoNever
		c := dialT(t, env.cfg)
		check(t, runT(t, c, Command{Script: probe, Args: []string{"arg"}, Sudo: true}), "sudo=0\narg\n")
	})
	t.Run("sudo always, also for root", func(t *testing.T) {
		t.Parallel()
		env := newEnv(t, serverOptions{})
		env.cfg.Sudo = SudoAlways
		c := dialT(t, env.cfg)
		check(t, runT(t, c, Command{Script: probe, Args: []string{"arg"}, Sudo: true}), "sudo=1\narg\n")
		check(t, runT(t, c, Command{Script: probe, Args: []string{"arg"}}), "sudo=0\narg\n")
	})
	t.Run("wrong password", func(t *testing.T) {
		t.Parallel()
		env := newEnv(t, serverOptions{sudoPassword: "the-real-one"})
		env.cfg.User, env.cfg.SudoPassword = "ops", canarySudo
		c := dialT(t, env.cfg)
		res, err := c.Run(context.Background(), Command{Name: "probe", Script: probe, Sudo: true})
		var ae *AuthError
		if !errors.As(err, &ae) || !ae.Sudo || IsRetryable(err) || !strings.Contains(err.Error(), "incorrect password") {
			t.Fatalf("got %T %v", err, err)
		}
		noSecret(t, err)
		check(t, res, "")
	})
	t.Run("password required but none given", func(t *testing.T) {
		t.Parallel()
		env := newEnv(t, serverOptions{sudoPassword: "the-real-one"})
		env.cfg.User = "ops"
		c := dialT(t, env.cfg)
		_, err := c.Run(context.Background(), Command{Script: probe, Sudo: true})
		var ae *AuthError
		if !errors.As(err, &ae) || !strings.Contains(err.Error(), "a password is required") {
			t.Fatalf("got %T %v", err, err)
		}
	})
	t.Run("secrets redacted from stderr tail", func(t *testing.T) {
		t.Parallel()
		env := newEnv(t, serverOptions{})
		env.cfg.Password, env.cfg.SudoPassword = canaryPassword, canarySudo
		c := dialT(t, env.cfg)
		_, err := c.Run(context.Background(), Command{Script: `echo "$1 $2" >&2; exit 1`, Args: []string{canaryPassword, canarySudo}})
		var ee *ExitError
		if !errors.As(err, &ee) || ee.StderrTail != redact.Marker+" "+redact.Marker {
			t.Fatalf("got %v", err)
		}
		noSecret(t, err)
	})
}

func TestConcurrentRunsShareOneConnection(t *testing.T) {
	t.Parallel()
	env := newEnv(t, serverOptions{})
	env.cfg.MaxSessions = 4
	c := dialT(t, env.cfg)
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := c.Run(context.Background(), Command{Script: `sleep 0.1; echo "$1"`, Args: []string{fmt.Sprint(i)}})
			if err == nil && string(res.Stdout) != fmt.Sprintf("%d\n", i) {
				err = fmt.Errorf("run %d: got %q", i, res.Stdout)
			}
			if err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if env.srv.accepted.Load() != 1 || env.srv.peak.Load() > 4 {
		t.Fatalf("connections %d, peak sessions %d", env.srv.accepted.Load(), env.srv.peak.Load())
	}
}

func TestKeepalive(t *testing.T) {
	t.Parallel()
	t.Run("sent", func(t *testing.T) {
		t.Parallel()
		env := newEnv(t, serverOptions{})
		env.cfg.KeepaliveInterval = 20 * time.Millisecond
		c := dialT(t, env.cfg)
		time.Sleep(200 * time.Millisecond)
		if n := env.srv.alives.Load(); n < 3 {
			t.Fatalf("%d keepalives", n)
		}
		c.Close()
		n := env.srv.alives.Load()
		time.Sleep(100 * time.Millisecond)
		if env.srv.alives.Load() > n+1 {
			t.Fatal("keepalives continue after Close")
		}
	})
	t.Run("unanswered closes the connection", func(t *testing.T) {
		t.Parallel()
		env := newEnv(t, serverOptions{ignoreKeepalives: true})
		env.cfg.KeepaliveInterval = 50 * time.Millisecond
		c := dialT(t, env.cfg)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := c.Run(ctx, Command{Script: "sleep 5"})
		if err == nil || !IsRetryable(err) || !strings.Contains(err.Error(), "keepalive") {
			t.Fatalf("got %v", err)
		}
		if err := c.Close(); err != nil {
			t.Fatalf("Close after keepalive failure: %v", err)
		}
	})
}

func TestConnectionLoss(t *testing.T) {
	t.Parallel()
	env := newEnv(t, serverOptions{})
	c := dialT(t, env.cfg)
	runT(t, c, Command{Script: "true"})
	go func() { time.Sleep(200 * time.Millisecond); env.srv.stop() }()
	_, err := c.Run(context.Background(), Command{Script: "sleep 5"})
	if err == nil || !IsRetryable(err) {
		t.Fatalf("got %v", err)
	}
	_, err = c.Run(context.Background(), Command{Script: "true"})
	if err == nil || !IsRetryable(err) {
		t.Fatalf("after loss: got %v", err)
	}
}

func TestClose(t *testing.T) {
	t.Parallel()
	target := startServer(t, serverOptions{password: "x"})
	bastion := startServer(t, serverOptions{password: "x"})
	cfg := Config{Address: target.host, Port: target.port, Password: "x", KnownHostsFile: knownHostsFor(t, false, target, bastion),
		Bastion: &Config{Address: bastion.host, Port: bastion.port, Password: "x"}}
	c := dialT(t, cfg)
	ctx := context.Background()
	running := make(chan error, 1)
	go func() { _, err := c.Run(ctx, Command{Script: "sleep 5"}); running <- err }()
	time.Sleep(200 * time.Millisecond)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal("second Close:", err)
	}
	select {
	case err := <-running:
		if !errors.Is(err, ErrClosed) {
			t.Fatalf("running Run: %v", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Close did not end a running Run")
	}
	if _, err := c.Run(ctx, Command{Script: "true"}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Run after Close: %v", err)
	}
	if err := c.Upload(ctx, File{Path: "/tmp/x", Content: strings.NewReader("x")}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Upload after Close: %v", err)
	}
	// The bastion connection Dial opened went with it.
	deadline := time.Now().Add(2 * time.Second)
	for bastion.ended.Load() != 1 || target.ended.Load() != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("connections still open: bastion %d target %d ended", bastion.ended.Load(), target.ended.Load())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestCancelWhileHostDoesNotAnswer(t *testing.T) {
	t.Parallel()
	env := newEnv(t, serverOptions{stallSessions: true})
	c := dialT(t, env.cfg)
	for _, op := range []func(ctx context.Context) error{
		func(ctx context.Context) error { _, err := c.Run(ctx, Command{Script: "true"}); return err },
		func(ctx context.Context) error {
			return c.Upload(ctx, File{Path: "/tmp/never", Content: strings.NewReader("x")})
		},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		start := time.Now()
		err := op(ctx)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("got %v", err)
		}
		if d := time.Since(start); d > 30*time.Second { // a hang, not a speed bound
			t.Fatalf("returned after %s", d)
		}
	}
	// Close does not wait for the host either.
	start := time.Now()
	done := make(chan error, 1)
	go func() { _, err := c.Run(context.Background(), Command{Script: "true"}); done <- err }()
	time.Sleep(100 * time.Millisecond)
	c.Close()
	if err := <-done; !errors.Is(err, ErrClosed) || time.Since(start) > 30*time.Second {
		t.Fatalf("got %v after %s", err, time.Since(start))
	}
}
