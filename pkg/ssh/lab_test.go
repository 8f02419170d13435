package ssh_test

// Real-SSH tests: the transport against OpenSSH servers on the local lab's
// simulated hosts (test/lab). Full hosts (systemd, PAM, real sudo) where
// sudo and logins matter, light hosts (sshd as PID 1) for host keys and
// reachability. Skipped unless the lab can run here (root, Linux, tools).

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	gossh "golang.org/x/crypto/ssh"

	"github.com/gpukit/gpukit/pkg/ssh"
	"github.com/gpukit/gpukit/test/lab"
)

func labConfig(l *lab.Lab, h lab.Host, user string) ssh.Config {
	return ssh.Config{
		Name:           h.Name,
		Address:        h.Address,
		User:           user,
		KeyFile:        l.KeyFile,
		KnownHostsFile: l.KnownHosts,
		ConnectTimeout: 10 * time.Second,
	}
}

func labDial(t *testing.T, cfg ssh.Config) *ssh.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := ssh.Dial(ctx, cfg)
	if err != nil {
		t.Fatalf("Dial %s as %s: %v", cfg.Name, cfg.User, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func labRun(t *testing.T, c *ssh.Client, cmd ssh.Command) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := c.Run(ctx, cmd)
	if err != nil {
		t.Fatalf("%s: Run %q: %v\nstdout: %s\nstderr: %s", c.Name(), cmd.Script, err, res.Stdout, res.Stderr)
	}
	return strings.TrimSpace(string(res.Stdout))
}

// leak fails when the lab's sudo password shows in an error or output.
func leak(t *testing.T, l *lab.Lab, what string, texts ...string) {
	t.Helper()
	for _, s := range texts {
		if strings.Contains(s, l.SudoPassword) {
			t.Fatalf("%s: the sudo password leaked: %q", what, s)
		}
	}
}

// TestLabFull: logins, sudo, bastion, cancellation and uploads on full hosts.
func TestLabFull(t *testing.T) {
	t.Parallel()
	l := lab.Start(t, lab.Options{Hosts: 3})
	h1, h2 := l.Hosts[0], l.Hosts[1]

	t.Run("key auth as root", func(t *testing.T) {
		c := labDial(t, labConfig(l, h1, "root"))
		if got := labRun(t, c, ssh.Command{Script: "id -u; hostname"}); got != "0\n"+h1.Name {
			t.Fatalf("got %q", got)
		}
	})

	t.Run("password auth as ops", func(t *testing.T) {
		cfg := labConfig(l, h1, "ops")
		cfg.KeyFile, cfg.Password = "", l.SudoPassword
		c := labDial(t, cfg)
		if got := labRun(t, c, ssh.Command{Script: "id -un"}); got != "ops" {
			t.Fatalf("got %q", got)
		}
		cfg.Password = "wrong-password"
		_, err := ssh.Dial(context.Background(), cfg)
		var ae *ssh.AuthError
		if !errors.As(err, &ae) || ssh.IsRetryable(err) {
			t.Fatalf("wrong password: got %T %v", err, err)
		}
	})

	t.Run("agent auth", func(t *testing.T) {
		sock := filepath.Join(t.TempDir(), "agent.sock")
		agentCmd := exec.Command("ssh-agent", "-D", "-a", sock)
		if err := agentCmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { agentCmd.Process.Kill(); agentCmd.Wait() })
		for i := 0; ; i++ {
			if _, err := os.Stat(sock); err == nil {
				break
			} else if i > 100 {
				t.Fatal("ssh-agent socket did not appear")
			}
			time.Sleep(20 * time.Millisecond)
		}
		add := exec.Command("ssh-add", l.KeyFile)
		add.Env = append(os.Environ(), "SSH_AUTH_SOCK="+sock)
		if out, err := add.CombinedOutput(); err != nil {
			t.Fatalf("ssh-add: %v\n%s", err, out)
		}
		cfg := labConfig(l, h1, "deploy")
		cfg.KeyFile, cfg.UseAgent, cfg.AgentSocket = "", true, sock
		c := labDial(t, cfg)
		if got := labRun(t, c, ssh.Command{Script: "id -un"}); got != "deploy" {
			t.Fatalf("got %q", got)
		}
	})

	t.Run("bastion", func(t *testing.T) {
		cfg := labConfig(l, h2, "root")
		jump := labConfig(l, h1, "deploy")
		cfg.Bastion = &jump
		c := labDial(t, cfg)
		got := labRun(t, c, ssh.Command{Script: `echo "$(hostname) $SSH_CONNECTION"`})
		f := strings.Fields(got)
		if len(f) != 5 || f[0] != h2.Name || f[1] != h1.Address || f[3] != h2.Address {
			t.Fatalf("want %s reached from %s, got %q", h2.Name, h1.Address, got)
		}
		// Several hosts through one shared bastion connection.
		j := labDial(t, jump)
		for _, h := range l.Hosts[1:] {
			c, err := ssh.DialVia(context.Background(), j, labConfig(l, h, "root"))
			if err != nil {
				t.Fatal(err)
			}
			got := labRun(t, c, ssh.Command{Script: `echo "${SSH_CONNECTION%% *}"`})
			c.Close()
			if got != h1.Address {
				t.Fatalf("%s: client address %q, want %s", h.Name, got, h1.Address)
			}
		}
	})

	t.Run("sudo NOPASSWD as deploy", func(t *testing.T) {
		c := labDial(t, labConfig(l, h1, "deploy"))
		if got := labRun(t, c, ssh.Command{Script: "id -u", Sudo: true}); got != "0" {
			t.Fatalf("sudo id -u = %q", got)
		}
		if got := labRun(t, c, ssh.Command{Script: "id -un"}); got != "deploy" {
			t.Fatalf("without sudo: %q", got)
		}
		// A password given for a NOPASSWD rule: sudo does not read it, and it
		// must neither run as a command nor show up anywhere.
		cfg := labConfig(l, h1, "deploy")
		cfg.SudoPassword = l.SudoPassword
		c2 := labDial(t, cfg)
		res, err := c2.Run(context.Background(), ssh.Command{Script: `id -u; echo "$1"`, Args: []string{"arg"}, Sudo: true})
		if err != nil || string(res.Stdout) != "0\narg\n" {
			t.Fatalf("got %v %q %q", err, res.Stdout, res.Stderr)
		}
		leak(t, l, "NOPASSWD with a password", string(res.Stdout), string(res.Stderr))
	})

	t.Run("sudo with password as ops", func(t *testing.T) {
		cfg := labConfig(l, h1, "ops")
		cfg.SudoPassword = l.SudoPassword
		c := labDial(t, cfg)
		for range 2 { // the second run: sudo's credential cache must not change what stdin holds
			res, err := c.Run(context.Background(), ssh.Command{Name: "whoami", Script: `id -u; echo "$1 $#"; cat`, Args: []string{"a b", "c"}, Sudo: true})
			if err != nil {
				t.Fatalf("%v\nstderr: %s", err, res.Stderr)
			}
			if string(res.Stdout) != "0\na b 2\n" || len(res.Stderr) != 0 {
				t.Fatalf("stdout %q stderr %q", res.Stdout, res.Stderr)
			}
			leak(t, l, "sudo run", string(res.Stdout), string(res.Stderr))
		}

		cfg.SudoPassword = "not-" + l.SudoPassword
		c2 := labDial(t, cfg)
		res, err := c2.Run(context.Background(), ssh.Command{Name: "whoami", Script: "id -u", Sudo: true})
		var ae *ssh.AuthError
		if !errors.As(err, &ae) || !ae.Sudo || ssh.IsRetryable(err) {
			t.Fatalf("wrong sudo password: got %T %v", err, err)
		}
		leak(t, l, "wrong sudo password", err.Error(), string(res.Stdout), string(res.Stderr))
		if strings.Contains(err.Error(), cfg.SudoPassword) {
			t.Fatalf("wrong sudo password in the error: %v", err)
		}

		cfg.SudoPassword = ""
		c3 := labDial(t, cfg)
		_, err = c3.Run(context.Background(), ssh.Command{Script: "id -u", Sudo: true})
		if !errors.As(err, &ae) || !strings.Contains(err.Error(), "password is required") {
			t.Fatalf("no sudo password: got %T %v", err, err)
		}
	})

	// spec.ssh.sudo.enabled as the transport applies it: always (root too,
	// a site that logs everything through sudo) or never (a uid-0 account
	// with another name; a non-root user then runs as itself).
	t.Run("sudo modes", func(t *testing.T) {
		h3 := l.Hosts[2]
		deployUID := labRun(t, labDial(t, labConfig(l, h3, "root")), ssh.Command{
			Script: "id toor >/dev/null 2>&1 || useradd -o -u 0 -g 0 -M -d /root -s /bin/bash toor; id -u deploy"})
		probe := ssh.Command{Script: `echo "$(id -u) ${SUDO_USER:-no-sudo}"`, Sudo: true}
		for _, tc := range []struct {
			user string
			mode ssh.SudoMode
			want string
		}{
			{"root", ssh.SudoUnlessRoot, "0 no-sudo"},
			{"root", ssh.SudoAlways, "0 root"},
			{"toor", ssh.SudoNever, "0 no-sudo"},
			{"deploy", ssh.SudoAlways, "0 deploy"},
			{"deploy", ssh.SudoNever, deployUID + " no-sudo"},
		} {
			cfg := labConfig(l, h3, tc.user)
			cfg.Sudo = tc.mode
			if got := labRun(t, labDial(t, cfg), probe); got != tc.want {
				t.Errorf("%s, sudo mode %d: %q, want %q", tc.user, tc.mode, got, tc.want)
			}
		}
	})

	t.Run("cancel leaves no remote process", func(t *testing.T) {
		for _, user := range []string{"root", "ops"} {
			t.Run(user, func(t *testing.T) {
				cfg := labConfig(l, h1, user)
				cfg.SudoPassword = l.SudoPassword
				c := labDial(t, cfg)
				tag := fmt.Sprintf("300.%d", time.Now().UnixNano()%100000)
				find := ssh.Command{Script: `pgrep -af "$1" || true`, Args: []string{"[s]leep " + tag}}

				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				cancelled := make(chan time.Time, 1)
				go func() {
					defer cancel()
					for end := time.Now().Add(20 * time.Second); time.Now().Before(end); {
						res, err := c.Run(context.Background(), find) // a second session on the same connection
						if err == nil && len(res.Stdout) > 0 {
							break
						}
						time.Sleep(50 * time.Millisecond)
					}
					cancelled <- time.Now()
				}()
				_, err := c.Run(ctx, ssh.Command{Name: "long", Script: "sleep " + tag + " & sleep " + tag + "; echo done", Sudo: user != "root"})
				returned := time.Now()
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("got %v", err)
				}
				at := <-cancelled
				var left string
				for end := time.Now().Add(10 * time.Second); time.Now().Before(end); {
					if left = labRun(t, c, find); left == "" {
						break
					}
					time.Sleep(100 * time.Millisecond)
				}
				if left != "" {
					t.Fatalf("still running 10s after cancel:\n%s", left)
				}
				t.Logf("%s: Run returned %s after cancel; remote processes gone %s after cancel",
					user, returned.Sub(at).Round(time.Millisecond), time.Since(at).Round(time.Millisecond))
				// Checked independently with the system ssh client, too.
				if out := l.SSH(t, h1.Name, "pgrep -af '[s]leep "+tag+"' || true"); out != "" {
					t.Fatalf("pgrep over ssh: %s", out)
				}
			})
		}
	})

	t.Run("upload with mode via sudo", func(t *testing.T) {
		for _, user := range []string{"deploy", "ops"} {
			cfg := labConfig(l, h1, user)
			cfg.SudoPassword = l.SudoPassword
			c := labDial(t, cfg)
			path := "/etc/gpukit-test/" + user + "/conf.d/node.conf"
			content := "user=" + user + "\n"
			if err := c.Upload(context.Background(), ssh.File{Path: path, Mode: 0o640, Content: strings.NewReader(content), Sudo: true}); err != nil {
				t.Fatalf("%s: %v", user, err)
			}
			got := l.SSH(t, h1.Name, "stat -c '%a %U:%G' "+path+"; cat "+path+"; ls -A $(dirname "+path+"); ls -d /tmp/.gpukit-upload-* 2>/dev/null || true")
			if want := "640 root:root\nuser=" + user + "\nnode.conf"; got != want {
				t.Fatalf("%s: got %q, want %q", user, got, want)
			}
			// Without sudo, a non-root user cannot write there.
			err := c.Upload(context.Background(), ssh.File{Path: path, Mode: 0o644, Content: strings.NewReader("x")})
			var ee *ssh.ExitError
			if !errors.As(err, &ee) {
				t.Fatalf("%s: upload without sudo: %v", user, err)
			}
		}
	})

	t.Run("latency", func(t *testing.T) {
		for _, h := range l.Hosts {
			for _, user := range []string{"root", "ops"} {
				cfg := labConfig(l, h, user)
				cfg.SudoPassword = l.SudoPassword
				start := time.Now()
				c := labDial(t, cfg)
				dial := time.Since(start)
				start = time.Now()
				labRun(t, c, ssh.Command{Script: "true", Sudo: user == "ops"})
				first := time.Since(start)
				var runs []time.Duration
				for range 10 {
					start = time.Now()
					labRun(t, c, ssh.Command{Script: "true", Sudo: user == "ops"})
					runs = append(runs, time.Since(start))
				}
				slices.Sort(runs)
				t.Logf("%s as %-4s (sudo=%v): dial %s, first run %s, run median %s",
					h.Name, user, user == "ops", dial.Round(time.Millisecond), first.Round(time.Millisecond), runs[len(runs)/2].Round(time.Millisecond))
				c.Close()
			}
		}
	})
}

// TestLabLight: host key handling and unreachable hosts on light hosts.
func TestLabLight(t *testing.T) {
	t.Parallel()
	l := lab.Start(t, lab.Options{Hosts: 8, Light: true})
	rekeyed, stopped := l.Hosts[2], l.Hosts[3]
	var healthy []lab.Host // untouched by the subtests below
	for _, h := range l.Hosts {
		if h != rekeyed && h != stopped {
			healthy = append(healthy, h)
		}
	}

	t.Run("unknown host refused, accept-new records it", func(t *testing.T) {
		kh := filepath.Join(t.TempDir(), "known_hosts")
		if err := os.WriteFile(kh, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		h := l.Hosts[0]
		cfg := labConfig(l, h, "root")
		cfg.KnownHostsFile = kh
		_, err := ssh.Dial(context.Background(), cfg)
		var ue *ssh.UnknownHostError
		if !errors.As(err, &ue) || ssh.IsRetryable(err) || !strings.Contains(err.Error(), "--accept-new-host-keys") {
			t.Fatalf("got %T %v", err, err)
		}
		if data, _ := os.ReadFile(kh); len(data) != 0 {
			t.Fatalf("known_hosts written without accept-new: %s", data)
		}

		// Every host at once, into one file.
		var wg sync.WaitGroup
		errs := make(chan error, len(l.Hosts))
		for _, h := range l.Hosts {
			wg.Add(1)
			go func() {
				defer wg.Done()
				cfg := labConfig(l, h, "root")
				cfg.KnownHostsFile, cfg.AcceptNewHostKeys = kh, true
				c, err := ssh.Dial(context.Background(), cfg)
				if err != nil {
					errs <- err
					return
				}
				c.Close()
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		recorded := readKnownHosts(t, kh)
		trusted := readKnownHosts(t, l.KnownHosts)
		if len(recorded) != len(l.Hosts) {
			t.Fatalf("recorded %d keys for %d hosts: %v", len(recorded), len(l.Hosts), recorded)
		}
		for host, keys := range recorded {
			if len(keys) != 1 || !slices.Contains(trusted[host], keys[0]) {
				t.Fatalf("%s: recorded %v, the lab created %v", host, keys, trusted[host])
			}
		}
		// Strict from now on.
		cfg.AcceptNewHostKeys = false
		for _, h := range l.Hosts {
			cfg := labConfig(l, h, "root")
			cfg.KnownHostsFile = kh
			labRun(t, labDial(t, cfg), ssh.Command{Script: "true"})
		}
	})

	t.Run("changed host key refused", func(t *testing.T) {
		h := rekeyed
		labDial(t, labConfig(l, h, "root")).Close()
		l.Rekey(t, h.Name)
		for _, acceptNew := range []bool{false, true} {
			cfg := labConfig(l, h, "root")
			cfg.AcceptNewHostKeys, cfg.ConnectRetries = acceptNew, 2
			_, err := ssh.Dial(context.Background(), cfg)
			var he *ssh.HostKeyChangedError
			if !errors.As(err, &he) || ssh.IsRetryable(err) {
				t.Fatalf("accept-new=%v: got %T %v", acceptNew, err, err)
			}
			for _, want := range append([]string{h.Name, he.Got, l.KnownHosts + ":"}, he.Want...) {
				if !strings.Contains(err.Error(), want) {
					t.Fatalf("message lacks %q: %v", want, err)
				}
			}
			if slices.Contains(he.Want, he.Got) {
				t.Fatalf("got key is among the recorded ones: %+v", he)
			}
			t.Logf("%v", err)
		}
	})

	t.Run("stopped host fails fast, others work", func(t *testing.T) {
		down := stopped
		l.Stop(t, down.Name)
		var wg sync.WaitGroup
		var downErr error
		var downTook time.Duration
		cfgDown := labConfig(l, down, "root")
		cfgDown.ConnectTimeout = 3 * time.Second
		cfgDown.ConnectRetries = 2 // an absent host must not be retried: it would cost 3 timeouts
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			_, downErr = ssh.Dial(context.Background(), cfgDown)
			downTook = time.Since(start)
		}()
		for _, h := range healthy[:2] {
			labRun(t, labDial(t, labConfig(l, h, "root")), ssh.Command{Script: "true"})
		}
		wg.Wait()
		var ce *ssh.ConnectError
		if !errors.As(downErr, &ce) || !ssh.IsRetryable(downErr) ||
			!strings.Contains(downErr.Error(), down.Name) || !strings.Contains(downErr.Error(), down.Address) {
			t.Fatalf("got %T %v", downErr, downErr)
		}
		if ce.Attempts != 1 || !(strings.Contains(downErr.Error(), "TCP connect") || strings.Contains(downErr.Error(), "no route to host")) {
			t.Fatalf("stopped host: %d attempts (%v), want 1: a host that is not there is not retried", ce.Attempts, downErr)
		}
		t.Logf("stopped host: %v (after %s)", downErr, downTook.Round(time.Millisecond))
	})

	t.Run("fan-out latency", func(t *testing.T) {
		// Every healthy host at once: dial, run, close; per host and in all.
		took := make([][2]time.Duration, len(healthy))
		var wg sync.WaitGroup
		start := time.Now()
		for i, h := range healthy {
			wg.Add(1)
			go func() {
				defer wg.Done()
				t0 := time.Now()
				c := labDial(t, labConfig(l, h, "root"))
				took[i][0] = time.Since(t0)
				t0 = time.Now()
				labRun(t, c, ssh.Command{Script: "true"})
				took[i][1] = time.Since(t0)
				c.Close()
			}()
		}
		wg.Wait()
		wall := time.Since(start)
		for i, h := range healthy {
			t.Logf("%s: dial %s, first run %s", h.Name, took[i][0].Round(time.Millisecond), took[i][1].Round(time.Millisecond))
		}
		t.Logf("%d hosts at once: %s wall", len(healthy), wall.Round(time.Millisecond))
	})
}

// readKnownHosts maps each host pattern of a known_hosts file to its keys
// (authorized_keys form).
func readKnownHosts(t *testing.T, path string) map[string][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string][]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		_, hosts, key, _, _, err := gossh.ParseKnownHosts(sc.Bytes())
		if err != nil {
			t.Fatalf("%s: %q: %v", path, sc.Text(), err)
		}
		for _, h := range hosts {
			if host, port, err := net.SplitHostPort(h); err == nil && port == "22" {
				h = host
			}
			out[h] = append(out[h], strings.TrimSpace(string(gossh.MarshalAuthorizedKey(key))))
		}
	}
	for h := range out {
		sort.Strings(out[h])
	}
	return out
}
