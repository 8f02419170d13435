package engine_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/engine/enginetest"
	"github.com/gpukit/gpukit/pkg/event"
	"github.com/gpukit/gpukit/pkg/redact"
	"github.com/gpukit/gpukit/pkg/ssh"
)

func TestNoSecretLeaks(t *testing.T) {
	t.Parallel()
	const (
		password = "Canary-Passw0rd-7d1e"
		token    = "canary.joiNtok3n9x8y7z"
		learned  = "learned-canary-c3rtk3y"
	)
	canaries := []string{password, token, learned}
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

	for _, dryRun := range []bool{false, true} {
		t.Run(fmt.Sprintf("dry-run=%v", dryRun), func(t *testing.T) {
			t.Parallel()
			fleet := &enginetest.Fleet{Handler: func(_ context.Context, e *enginetest.Executor, cmd ssh.Command) (ssh.Result, error) {
				switch cmd.Name {
				case "token create":
					return ssh.Result{Stdout: []byte(learned + "\n")}, nil
				case "echo":
					return ssh.Result{
						Stdout: []byte("password is " + password + "\nb64 " + b64(password) + "\n"),
						Stderr: []byte("warning: token " + token),
					}, nil
				case "join":
					if e.Host == "gpu-002" {
						return ssh.Result{ExitCode: 1, Stderr: []byte("invalid token " + token + " / " + learned)}, nil
					}
				}
				return ssh.Result{}, nil
			}}
			p := &funcPhase{name: "secrets", run: func(ctx context.Context, h *engine.Host) error {
				res, err := h.Run(ctx, "token create", ssh.Command{Script: "kubeadm token create"}, engine.SecretOutput())
				if err != nil {
					return err
				}
				h.AddSecret(strings.TrimSpace(string(res.Stdout)))
				if _, err := h.Run(ctx, "echo", ssh.Command{Script: "echo '" + password + "'", Args: []string{token}}); err != nil {
					return err
				}
				h.Logf("joining with %s", learned)
				if _, err := h.Apply(ctx, "join", ssh.Command{Script: "kubeadm join --token " + token + " --certificate-key " + learned}); err != nil {
					return err
				}
				if h.Name() == "gpu-003" {
					return fmt.Errorf("phase failed with %s and %s", password, b64(token))
				}
				return nil
			}}
			logDir := t.TempDir()
			rec := &enginetest.Recorder{}
			r := &engine.Runner{Phases: []engine.Phase{p}, DryRun: dryRun, Sink: rec, LogDir: logDir, Redact: []string{password, token}}
			sum, err := r.Run(context.Background(), enginetest.Hosts(3), fleet.Dial)
			if err == nil && !dryRun {
				t.Fatal("expected failures")
			}

			var sources []string
			files, _ := filepath.Glob(filepath.Join(sum.LogDir, "*.log"))
			if len(files) != 4 {
				t.Fatalf("log files %v, want run.log and one per host", files)
			}
			redacted := false
			for _, f := range files {
				b, rerr := os.ReadFile(f)
				if rerr != nil {
					t.Fatal(rerr)
				}
				sources = append(sources, string(b))
				redacted = redacted || strings.Contains(string(b), redact.Marker)
			}
			if !redacted {
				t.Error("no [REDACTED] in any log: did the secrets go through at all?")
			}
			for _, e := range rec.Events() {
				j, _ := json.Marshal(e)
				sources = append(sources, string(j))
			}
			if err != nil {
				sources = append(sources, err.Error())
			}
			for _, h := range sum.Hosts {
				if h.Err != nil {
					sources = append(sources, h.Err.Error())
				}
				for _, pr := range h.Phases {
					sources = append(sources, pr.Reason)
				}
			}
			for _, c := range canaries {
				for _, form := range []string{c, b64(c)} {
					for _, s := range sources {
						if strings.Contains(s, form) {
							t.Errorf("canary %q leaked in:\n%s", form, s)
						}
					}
				}
			}
			if !dryRun {
				host2, _ := os.ReadFile(filepath.Join(sum.LogDir, "gpu-002.log"))
				for _, want := range []string{"stdout| password is [REDACTED]", "stderr| warning: token [REDACTED]", "FAILED", "kubeadm join --token [REDACTED]"} {
					if !strings.Contains(string(host2), want) {
						t.Errorf("gpu-002.log lacks %q:\n%s", want, host2)
					}
				}
			}
		})
	}
}

func TestLogDirectoryLayout(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	r := &engine.Runner{Phases: []engine.Phase{probeAndApply("p")}, LogDir: base}
	var dirs []string
	for i := 0; i < 2; i++ { // two runs in the same second get two directories
		sum, err := r.Run(context.Background(), enginetest.Hosts(2), (&enginetest.Fleet{}).Dial)
		if err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, sum.LogDir)
		if h := sum.Hosts[0]; h.LogFile != filepath.Join(sum.LogDir, "gpu-001.log") {
			t.Errorf("log file %q", h.LogFile)
		}
		for _, f := range []string{"run.log", "gpu-001.log", "gpu-002.log"} {
			st, err := os.Stat(filepath.Join(sum.LogDir, f))
			if err != nil {
				t.Fatal(err)
			}
			if st.Mode().Perm() != 0o600 {
				t.Errorf("%s mode %v", f, st.Mode())
			}
		}
	}
	if dirs[0] == dirs[1] || filepath.Dir(dirs[0]) != base {
		t.Errorf("run directories %v", dirs)
	}
	runLog, _ := os.ReadFile(filepath.Join(dirs[0], "run.log"))
	for _, want := range []string{"== phase connect", "gpu-002 p: ok in", "run ok: 2 ok, 0 failed"} {
		if !strings.Contains(string(runLog), want) {
			t.Errorf("run.log lacks %q:\n%s", want, runLog)
		}
	}
	hostLog, _ := os.ReadFile(filepath.Join(dirs[0], "gpu-001.log"))
	for _, want := range []string{"connected: enginetest executor for gpu-001", "$ read probe:", "    echo probe p", "$ apply change:", "gpu-001 p: ok in"} {
		if !strings.Contains(string(hostLog), want) {
			t.Errorf("gpu-001.log lacks %q:\n%s", want, hostLog)
		}
	}
}

func TestUnusableLogDirIsASetupError(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	sum, err := (&engine.Runner{LogDir: file}).Run(context.Background(), enginetest.Hosts(1), (&enginetest.Fleet{}).Dial)
	if err == nil || sum != nil {
		t.Fatalf("got %v, %v", sum, err)
	}
}

// Data output (the facts probe's) is returned and logged as one block,
// redacted, but not sent line by line as output events; stderr still is.
func TestDataOutput(t *testing.T) {
	t.Parallel()
	const secret = "canary-data-5e2f"
	fleet := &enginetest.Fleet{Handler: func(_ context.Context, _ *enginetest.Executor, cmd ssh.Command) (ssh.Result, error) {
		return ssh.Result{Stdout: []byte("os.id=debian\ntoken=" + secret + "\n"), Stderr: []byte("a warning\n")}, nil
	}}
	var got string
	p := &funcPhase{name: "facts", run: func(ctx context.Context, h *engine.Host) error {
		res, err := h.Run(ctx, "probe", ssh.Command{Script: "probe"}, engine.DataOutput())
		got = string(res.Stdout)
		return err
	}}
	rec := &enginetest.Recorder{}
	r := &engine.Runner{Phases: []engine.Phase{p}, Sink: rec, LogDir: t.TempDir(), Redact: []string{secret}}
	sum, err := r.Run(context.Background(), enginetest.Hosts(1), fleet.Dial)
	if err != nil {
		t.Fatal(err)
	}
	if got != "os.id=debian\ntoken="+secret+"\n" {
		t.Errorf("the step returned %q", got)
	}
	var stderr int
	for _, e := range rec.Events() {
		if e.Type != event.Output {
			continue
		}
		if e.Stream == event.Stdout {
			t.Errorf("data output sent as an event: %+v", e)
		} else if e.Line == "a warning" {
			stderr++
		}
	}
	if stderr != 1 {
		t.Errorf("stderr events: %d, want 1", stderr)
	}
	b, err := os.ReadFile(sum.Hosts[0].LogFile)
	if err != nil {
		t.Fatal(err)
	}
	log := string(b)
	if !strings.Contains(log, "stdout| os.id=debian\n") || !strings.Contains(log, "stdout| token="+redact.Marker) || strings.Contains(log, secret) {
		t.Errorf("log:\n%s", log)
	}
}
