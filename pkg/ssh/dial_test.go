package ssh

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	gossh "golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
	"golang.org/x/crypto/ssh/knownhosts"
)

const (
	canaryPassword   = "canary-login-pw-7f3a9"
	canarySudo       = "canary-sudo-pw-c41d2"
	canaryPassphrase = "canary-passphrase-0b8e6"
)

// noSecret fails when err's message (or any it wraps) shows a canary.
func noSecret(t *testing.T, err error) {
	t.Helper()
	for e := err; e != nil; e = errors.Unwrap(e) {
		for _, c := range []string{canaryPassword, canarySudo, canaryPassphrase} {
			if strings.Contains(e.Error(), c) {
				t.Fatalf("secret %q in error: %v", c, e)
			}
		}
	}
}

func TestKeyAuth(t *testing.T) {
	t.Parallel()
	env := newEnv(t, serverOptions{})
	c := dialT(t, env.cfg)
	res := runT(t, c, Command{Name: "hello", Script: "echo hello; echo oops >&2"})
	if string(res.Stdout) != "hello\n" || string(res.Stderr) != "oops\n" || res.ExitCode != 0 {
		t.Fatalf("got %+v", res)
	}
	if c.Name() != "node-1" || c.User() != "root" || c.Address() != env.srv.addr() {
		t.Fatalf("accessors: %s %s %s", c.Name(), c.User(), c.Address())
	}
	// What was negotiated, for the host log and the benchmark.
	if d := c.Describe(); !strings.HasPrefix(d, "root@"+env.srv.addr()+" kex ") || !strings.Contains(d, " hostkey ") || !strings.Contains(d, " cipher ") {
		t.Errorf("Describe() = %q", d)
	}
}

func TestPasswordAuth(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		opts serverOptions
	}{
		{"password", serverOptions{password: canaryPassword}},
		{"keyboard-interactive", serverOptions{kiPassword: canaryPassword}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := startServer(t, tc.opts)
			cfg := Config{Name: "pw", Address: srv.host, Port: srv.port, User: "ops", Password: canaryPassword,
				KnownHostsFile: knownHostsFor(t, false, srv), KeepaliveInterval: -1}
			c := dialT(t, cfg)
			runT(t, c, Command{Script: "true"})

			cfg.Password = "wrong-" + canaryPassword
			_, err := Dial(context.Background(), cfg)
			var ae *AuthError
			if !errors.As(err, &ae) || IsRetryable(err) {
				t.Fatalf("want non-retryable *AuthError, got %T %v", err, err)
			}
			noSecret(t, err)
		})
	}
}

func TestAgentAuth(t *testing.T) {
	t.Parallel()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := gossh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	srv := startServer(t, serverOptions{authorized: []gossh.PublicKey{signer.PublicKey()}})
	keyring := agent.NewKeyring()
	if err := keyring.Add(agent.AddedKey{PrivateKey: priv}); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(t.TempDir(), "agent.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { agent.ServeAgent(keyring, c); c.Close() }()
		}
	}()
	cfg := Config{Address: srv.host, Port: srv.port, UseAgent: true, AgentSocket: sock,
		KnownHostsFile: knownHostsFor(t, false, srv), KeepaliveInterval: -1}
	c := dialT(t, cfg)
	runT(t, c, Command{Script: "true"})

	t.Run("no socket", func(t *testing.T) {
		cfg := cfg
		cfg.AgentSocket = filepath.Join(t.TempDir(), "missing.sock")
		if _, err := Dial(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "ssh-agent") {
			t.Fatalf("want agent error, got %v", err)
		}
	})
}

func TestEncryptedKey(t *testing.T) {
	t.Parallel()
	key, pub := writeKey(t, canaryPassphrase)
	srv := startServer(t, serverOptions{authorized: []gossh.PublicKey{pub}})
	cfg := Config{Address: srv.host, Port: srv.port, KeyFile: key, KeyPassphrase: canaryPassphrase,
		KnownHostsFile: knownHostsFor(t, false, srv), KeepaliveInterval: -1}
	runT(t, dialT(t, cfg), Command{Script: "true"})

	cfg.KeyPassphrase = ""
	_, err := Dial(context.Background(), cfg)
	if err == nil || !strings.Contains(err.Error(), "encrypted") || IsRetryable(err) {
		t.Fatalf("missing passphrase: got %v", err)
	}
	cfg.KeyPassphrase = "wrong-" + canaryPassphrase
	_, err = Dial(context.Background(), cfg)
	if err == nil || IsRetryable(err) {
		t.Fatalf("wrong passphrase: got %v", err)
	}
	noSecret(t, err)
	if srv.accepted.Load() != 1 {
		t.Fatalf("a bad key must fail before connecting; server saw %d connections", srv.accepted.Load())
	}
}

func TestUnknownHostRefused(t *testing.T) {
	t.Parallel()
	env := newEnv(t, serverOptions{})
	env.cfg.KnownHostsFile = filepath.Join(t.TempDir(), "known_hosts") // does not exist
	_, err := Dial(context.Background(), env.cfg)
	var ue *UnknownHostError
	if !errors.As(err, &ue) || IsRetryable(err) {
		t.Fatalf("want *UnknownHostError, got %T %v", err, err)
	}
	msg := err.Error()
	for _, want := range []string{"node-1", "--accept-new-host-keys", "ssh-keyscan", gossh.FingerprintSHA256(env.srv.hostKey)} {
		if !strings.Contains(msg, want) {
			t.Errorf("message lacks %q: %s", want, msg)
		}
	}
	if _, err := os.Stat(env.cfg.KnownHostsFile); !os.IsNotExist(err) {
		t.Errorf("known_hosts must stay untouched without accept-new: %v", err)
	}
	if env.srv.logins.Load() != 0 {
		t.Errorf("must not log in to an unknown host")
	}
}

func TestAcceptNewRecordsKey(t *testing.T) {
	t.Parallel()
	env := newEnv(t, serverOptions{})
	env.cfg.KnownHostsFile = filepath.Join(t.TempDir(), "sub", "known_hosts")
	env.cfg.AcceptNewHostKeys = true
	dialT(t, env.cfg)
	data, err := os.ReadFile(env.cfg.KnownHostsFile)
	if err != nil {
		t.Fatal(err)
	}
	want := knownhosts.Line([]string{"[127.0.0.1]:" + fmt.Sprint(env.srv.port)}, env.srv.hostKey) + "\n"
	if string(data) != want {
		t.Fatalf("known_hosts:\n%s\nwant:\n%s", data, want)
	}
	// Strict from now on, and nothing appended twice.
	env.cfg.AcceptNewHostKeys = false
	dialT(t, env.cfg)
	env.cfg.AcceptNewHostKeys = true
	dialT(t, env.cfg)
	if again, _ := os.ReadFile(env.cfg.KnownHostsFile); string(again) != want {
		t.Fatalf("known_hosts changed on a known host:\n%s", again)
	}
}

func TestAcceptNewFileWithoutTrailingNewline(t *testing.T) {
	t.Parallel()
	env := newEnv(t, serverOptions{})
	other := newSigner(t).PublicKey()
	first := knownhosts.Line([]string{"other.example"}, other)
	if err := os.WriteFile(env.cfg.KnownHostsFile, []byte(first), 0o600); err != nil {
		t.Fatal(err)
	}
	env.cfg.AcceptNewHostKeys = true
	dialT(t, env.cfg)
	env.cfg.AcceptNewHostKeys = false
	dialT(t, env.cfg)
	data, _ := os.ReadFile(env.cfg.KnownHostsFile)
	if lines := strings.Split(strings.TrimSpace(string(data)), "\n"); len(lines) != 2 || lines[0] != first {
		t.Fatalf("known_hosts:\n%s", data)
	}
}

func TestHostKeyChanged(t *testing.T) {
	t.Parallel()
	env := newEnv(t, serverOptions{})
	old := newSigner(t).PublicKey()
	line := knownhosts.Line([]string{knownhosts.Normalize(env.srv.addr())}, old)
	content := "# comment\n" + line + "\n"
	if err := os.WriteFile(env.cfg.KnownHostsFile, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, acceptNew := range []bool{false, true} {
		env.cfg.AcceptNewHostKeys = acceptNew
		env.cfg.ConnectRetries = 3
		_, err := Dial(context.Background(), env.cfg)
		var he *HostKeyChangedError
		if !errors.As(err, &he) || IsRetryable(err) {
			t.Fatalf("accept-new=%v: want *HostKeyChangedError, got %T %v", acceptNew, err, err)
		}
		if he.Got != gossh.FingerprintSHA256(env.srv.hostKey) || len(he.Want) != 1 || he.Want[0] != gossh.FingerprintSHA256(old) {
			t.Fatalf("fingerprints: %+v", he)
		}
		msg := err.Error()
		for _, want := range []string{"node-1", he.Got, he.Want[0], env.cfg.KnownHostsFile + ":2", "CHANGED"} {
			if !strings.Contains(msg, want) {
				t.Errorf("message lacks %q: %s", want, msg)
			}
		}
	}
	if data, _ := os.ReadFile(env.cfg.KnownHostsFile); string(data) != content {
		t.Fatalf("known_hosts modified:\n%s", data)
	}
	if n := env.srv.accepted.Load(); n != 2 {
		t.Fatalf("host key errors must not be retried: %d connections", n)
	}
}

func TestHashedKnownHosts(t *testing.T) {
	t.Parallel()
	env := newEnv(t, serverOptions{})
	env.cfg.KnownHostsFile = knownHostsFor(t, true, env.srv)
	runT(t, dialT(t, env.cfg), Command{Script: "true"})
}

func TestRevokedHostKey(t *testing.T) {
	t.Parallel()
	env := newEnv(t, serverOptions{})
	data, _ := os.ReadFile(env.cfg.KnownHostsFile)
	data = append(data, "@revoked * "+string(gossh.MarshalAuthorizedKey(env.srv.hostKey))...)
	os.WriteFile(env.cfg.KnownHostsFile, data, 0o600)
	_, err := Dial(context.Background(), env.cfg)
	var re *HostKeyRevokedError
	if !errors.As(err, &re) || IsRetryable(err) {
		t.Fatalf("want *HostKeyRevokedError, got %T %v", err, err)
	}
}

// A host with RSA and ed25519 keys, of which only the RSA key is on record,
// must be asked for its RSA key rather than be taken for a changed host.
func TestHostKeyAlgorithmFollowsRecord(t *testing.T) {
	t.Parallel()
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	rsaSigner, err := gossh.NewSignerFromKey(rsaKey)
	if err != nil {
		t.Fatal(err)
	}
	ed := newSigner(t)
	key, pub := writeKey(t, "")
	srv := startServer(t, serverOptions{authorized: []gossh.PublicKey{pub}, hostKeys: []gossh.Signer{ed, rsaSigner}})
	kh := filepath.Join(t.TempDir(), "known_hosts")
	os.WriteFile(kh, []byte(knownhosts.Line([]string{knownhosts.Normalize(srv.addr())}, rsaSigner.PublicKey())+"\n"), 0o600)
	cfg := Config{Address: srv.host, Port: srv.port, KeyFile: key, KnownHostsFile: kh, KeepaliveInterval: -1}
	runT(t, dialT(t, cfg), Command{Script: "true"})
}

func TestConcurrentAcceptNew(t *testing.T) {
	t.Parallel()
	const n = 50
	key, pub := writeKey(t, "")
	kh := filepath.Join(t.TempDir(), "known_hosts")
	servers := make([]*testServer, n)
	for i := range servers {
		servers[i] = startServer(t, serverOptions{authorized: []gossh.PublicKey{pub}})
	}
	cfgFor := func(s *testServer) Config {
		return Config{Name: s.addr(), Address: s.host, Port: s.port, KeyFile: key, KnownHostsFile: kh,
			AcceptNewHostKeys: true, KeepaliveInterval: -1, ConnectTimeout: 20 * time.Second}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 2*n)
	dialClose := func(cfg Config) {
		defer wg.Done()
		c, err := Dial(context.Background(), cfg)
		if err != nil {
			errs <- err
			return
		}
		c.Close()
	}
	for _, s := range servers {
		wg.Add(1)
		go dialClose(cfgFor(s))
	}
	// The same host twice at once must still be recorded once.
	for range 5 {
		wg.Add(1)
		go dialClose(cfgFor(servers[0]))
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	data, err := os.ReadFile(kh)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) != n {
		t.Fatalf("known_hosts has %d lines, want %d:\n%s", len(lines), n, data)
	}
	seen := map[string]bool{}
	for _, l := range lines {
		_, hosts, _, _, _, err := gossh.ParseKnownHosts([]byte(l))
		if err != nil || len(hosts) != 1 || seen[hosts[0]] {
			t.Fatalf("bad or duplicate line %q: %v", l, err)
		}
		seen[hosts[0]] = true
	}
	// Every host now dials strictly.
	for _, s := range servers {
		cfg := cfgFor(s)
		cfg.AcceptNewHostKeys = false
		wg.Add(1)
		go dialClose(cfg)
	}
	errs = make(chan error, 2*n)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestBastion(t *testing.T) {
	t.Parallel()
	key, pub := writeKey(t, "")
	target := startServer(t, serverOptions{authorized: []gossh.PublicKey{pub}})
	bastion := startServer(t, serverOptions{authorized: []gossh.PublicKey{pub}})
	kh := knownHostsFor(t, false, target, bastion)
	cfg := Config{Name: "gpu-2", Address: target.host, Port: target.port, KeyFile: key, KnownHostsFile: kh, KeepaliveInterval: -1,
		Bastion: &Config{Name: "jump", Address: bastion.host, Port: bastion.port, KeyFile: key, KeepaliveInterval: -1}}
	c := dialT(t, cfg)
	if out := runT(t, c, Command{Script: "echo via"}); string(out.Stdout) != "via\n" {
		t.Fatalf("stdout %q", out.Stdout)
	}
	if bastion.forwards.Load() != 1 || target.logins.Load() != 1 {
		t.Fatalf("forwards through bastion %d, target logins %d", bastion.forwards.Load(), target.logins.Load())
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}

	// One bastion connection shared by several hosts.
	jumpCfg := *cfg.Bastion
	jumpCfg.KnownHostsFile = kh
	jump := dialT(t, jumpCfg)
	for range 3 {
		hc := cfg
		hc.Bastion = &Config{Address: "203.0.113.1"} // ignored by DialVia
		c, err := DialVia(context.Background(), jump, hc)
		if err != nil {
			t.Fatal(err)
		}
		runT(t, c, Command{Script: "true"})
		c.Close()
	}
	runT(t, jump, Command{Script: "true"}) // still open
	if bastion.logins.Load() != 2 || bastion.forwards.Load() != 4 {
		t.Fatalf("bastion logins %d forwards %d", bastion.logins.Load(), bastion.forwards.Load())
	}

	// A bastion that refuses us is reported as the bastion's failure.
	bad := cfg
	bad.Bastion = &Config{Name: "jump", Address: bastion.host, Port: bastion.port, Password: canaryPassword}
	_, err := Dial(context.Background(), bad)
	var ae *AuthError
	if !errors.As(err, &ae) || ae.Host != "jump" || !strings.Contains(err.Error(), "bastion for gpu-2") {
		t.Fatalf("got %v", err)
	}
	noSecret(t, err)
}

func TestConnectRetries(t *testing.T) {
	t.Parallel()
	t.Run("dropped connections are retried, bounded", func(t *testing.T) {
		t.Parallel()
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		var mu sync.Mutex
		accepted := 0
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				mu.Lock()
				accepted++
				mu.Unlock()
				c.Close()
			}
		}()
		key, _ := writeKey(t, "")
		cfg := Config{Name: "flaky", Address: "127.0.0.1", Port: ln.Addr().(*net.TCPAddr).Port, KeyFile: key,
			KnownHostsFile: filepath.Join(t.TempDir(), "kh"), ConnectRetries: 2, RetryBackoff: 10 * time.Millisecond}
		_, err = Dial(context.Background(), cfg)
		var ce *ConnectError
		if !errors.As(err, &ce) || ce.Attempts != 3 || !IsRetryable(err) {
			t.Fatalf("want retryable *ConnectError after 3 attempts, got %T %v", err, err)
		}
		// Not the library's "ssh: handshake failed: EOF": what answered,
		// and where.
		if want := "connect to flaky (" + ln.Addr().String() + ") after 3 attempts: the port answered but closed the connection before sending an SSH banner"; !strings.Contains(err.Error(), want) {
			t.Errorf("got %v, want %q", err, want)
		}
		mu.Lock()
		defer mu.Unlock()
		if accepted != 3 {
			t.Fatalf("server saw %d connections, want 3", accepted)
		}
	})
	t.Run("closed port fails fast with a clear error", func(t *testing.T) {
		t.Parallel()
		ln, _ := net.Listen("tcp", "127.0.0.1:0")
		port := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		key, _ := writeKey(t, "")
		start := time.Now()
		_, err := Dial(context.Background(), Config{Name: "down", Address: "127.0.0.1", Port: port, KeyFile: key,
			KnownHostsFile: filepath.Join(t.TempDir(), "kh"), ConnectRetries: 1, RetryBackoff: 10 * time.Millisecond})
		if err == nil || !strings.Contains(err.Error(), "connection refused") || !strings.Contains(err.Error(), "down") ||
			!strings.Contains(err.Error(), "2 attempts") {
			t.Fatalf("got %v", err)
		}
		if d := time.Since(start); d > 30*time.Second { // a hang, not a speed bound
			t.Fatalf("took %s", d)
		}
	})
	t.Run("a port that speaks another protocol is named and not retried", func(t *testing.T) {
		t.Parallel()
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		var accepted atomic.Int32
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				accepted.Add(1)
				// A web server answering the client's SSH version line.
				_, _ = c.Read(make([]byte, 64))
				_, _ = io.WriteString(c, "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\n\r\n\x1b[31m")
				c.Close()
			}
		}()
		key, _ := writeKey(t, "")
		_, err = Dial(context.Background(), Config{Name: "web", Address: "127.0.0.1", Port: ln.Addr().(*net.TCPAddr).Port, KeyFile: key,
			KnownHostsFile: filepath.Join(t.TempDir(), "kh"), ConnectRetries: 2, RetryBackoff: 10 * time.Millisecond})
		var ns *NotSSHError
		want := "connect to web (" + ln.Addr().String() + "): the port answered but is not an SSH server: it said \"HTTP/1.1 400 Bad Request\""
		if !errors.As(err, &ns) || IsRetryable(err) || !strings.Contains(err.Error(), want) || accepted.Load() != 1 {
			t.Fatalf("got %v after %d connections, want %q once", err, accepted.Load(), want)
		}
	})
	t.Run("a name that does not resolve is not retried", func(t *testing.T) {
		t.Parallel()
		key, _ := writeKey(t, "")
		// Not a domain name: the resolver says "no such host" without
		// asking a DNS server, the same answer as an NXDOMAIN.
		_, err := Dial(context.Background(), Config{Name: "typo", Address: "gpu..lab", KeyFile: key,
			KnownHostsFile: filepath.Join(t.TempDir(), "kh"), ConnectRetries: 2, RetryBackoff: time.Second})
		var dns *net.DNSError
		if !errors.As(err, &dns) || !dns.IsNotFound {
			t.Skipf("this resolver does not answer no such host for gpu..lab: %v", err)
		}
		var ce *ConnectError
		if !errors.As(err, &ce) || ce.Attempts != 1 || IsRetryable(err) || !strings.Contains(err.Error(), "no such host") {
			t.Fatalf("want one attempt, got %v", err)
		}
	})
	t.Run("auth failure is not retried", func(t *testing.T) {
		t.Parallel()
		srv := startServer(t, serverOptions{password: "right"})
		_, err := Dial(context.Background(), Config{Address: srv.host, Port: srv.port, Password: canaryPassword,
			KnownHostsFile: knownHostsFor(t, false, srv), ConnectRetries: 3, RetryBackoff: 10 * time.Millisecond})
		var ae *AuthError
		if !errors.As(err, &ae) || IsRetryable(err) || srv.accepted.Load() != 1 {
			t.Fatalf("got %T %v after %d connections", err, err, srv.accepted.Load())
		}
		noSecret(t, err)
	})
}

// blackHole accepts TCP connections and never says anything.
func blackHole(t *testing.T) (host string, port int) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	return "127.0.0.1", ln.Addr().(*net.TCPAddr).Port
}

func TestConnectTimeoutAndCancel(t *testing.T) {
	t.Parallel()
	host, port := blackHole(t)
	key, _ := writeKey(t, "")
	cfg := Config{Name: "silent", Address: host, Port: port, KeyFile: key, KnownHostsFile: filepath.Join(t.TempDir(), "kh"),
		ConnectTimeout: 300 * time.Millisecond}
	start := time.Now()
	_, err := Dial(context.Background(), cfg)
	if err == nil || !strings.Contains(err.Error(), "timed out") || !IsRetryable(err) {
		t.Fatalf("got %v", err)
	}
	if d := time.Since(start); d > 30*time.Second { // a hang, not a speed bound
		t.Fatalf("connect timeout took %s", d)
	}

	cfg.ConnectTimeout = time.Minute
	cfg.ConnectRetries = 5
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	start = time.Now()
	_, err = Dial(ctx, cfg)
	if !errors.Is(err, context.Canceled) || IsRetryable(err) {
		t.Fatalf("got %v", err)
	}
	if d := time.Since(start); d > 30*time.Second { // a hang, not a speed bound
		t.Fatalf("cancel took %s", d)
	}
}

func TestConfigErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{}, "address is empty"},
		{Config{Address: "h"}, "no authentication method"},
		{Config{Address: "h", Port: 70000, Password: "x"}, "port"},
	} {
		if _, err := Dial(context.Background(), tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: got %v, want %q", tc.cfg, err, tc.want)
		}
	}
}

func TestIsRetryable(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{&ConnectError{Err: &net.OpError{Op: "dial", Err: os.ErrDeadlineExceeded}}, true},
		{fmt.Errorf("x: %w", errConnectionLost), true},
		{&timeoutError{stage: "x"}, true},
		{&AuthError{Err: errors.New("no")}, false},
		{&HostKeyChangedError{}, false},
		{&UnknownHostError{}, false},
		{&ExitError{Code: 1}, false},
		{fmt.Errorf("run: %w", context.Canceled), false},
		{ErrClosed, false},
		{errors.New("something else"), false},
		{&ConnectError{Err: &net.OpError{Op: "dial", Err: &net.DNSError{Err: "no such host", Name: "gpu-1.lab", IsNotFound: true}}}, false},
		{&ConnectError{Err: &net.OpError{Op: "dial", Err: &net.DNSError{Err: "i/o timeout", Name: "gpu-1.lab", IsTimeout: true}}}, true},
		{&ConnectError{Err: &net.OpError{Op: "dial", Err: &net.DNSError{Err: "server misbehaving", Name: "gpu-1.lab", IsTemporary: true}}}, true},
		{&ConnectError{Err: &NotSSHError{Said: `"HTTP/1.1 400 Bad Request"`}}, false},
		{&ConnectError{Err: &noBannerError{err: fmt.Errorf("ssh: handshake failed: %w", io.EOF)}}, true},
	} {
		if got := IsRetryable(tc.err); got != tc.want {
			t.Errorf("IsRetryable(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

func TestHostAbsentIsNotRetried(t *testing.T) {
	for _, tc := range []struct {
		err    error
		absent bool
	}{
		{&timeoutError{stage: "TCP connect (10s)"}, true},
		{&net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.EHOSTUNREACH)}, true},
		{&net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ENETUNREACH)}, true},
		{&timeoutError{stage: "SSH handshake and login (10s)"}, false},
		{&net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}, false},
		{io.EOF, false},
	} {
		if got := hostAbsent(tc.err); got != tc.absent {
			t.Errorf("hostAbsent(%v) = %v, want %v", tc.err, got, tc.absent)
		}
	}
}

// A known_hosts file is parsed once while it stays the same, however many
// dials read it (a fan-out read it twice per host, parsing every host's
// lines each time), and again once it changes: a key recorded meanwhile, or
// an edit of the same size within the file system's clock granularity.
func TestKnownHostsParsedOnceWhileUnchanged(t *testing.T) {
	t.Parallel()
	kh := filepath.Join(t.TempDir(), "known_hosts")
	a, b := newSigner(t).PublicKey(), newSigner(t).PublicKey()
	lineA := knownhosts.Line([]string{knownhosts.Normalize("10.0.0.1:22")}, a) + "\n"
	if err := os.WriteFile(kh, []byte(lineA), 0o600); err != nil {
		t.Fatal(err)
	}
	h := hostKeys{name: "h", file: kh}
	parses := func() int {
		parsed.Lock()
		defer parsed.Unlock()
		return parsed.files[kh].parses
	}
	check := func(key gossh.PublicKey, want bool) {
		t.Helper()
		cb, err := h.load()
		if err != nil {
			t.Fatal(err)
		}
		if err := cb("10.0.0.1:22", zeroTCPAddr(), key); (err == nil) != want {
			t.Fatalf("key accepted %v, want %v (%v)", err == nil, want, err)
		}
	}
	for range 50 {
		check(a, true)
	}
	if n := parses(); n != 1 {
		t.Errorf("50 loads of an unchanged file parsed it %d times", n)
	}
	// The same size at once: another host's key of the same type.
	lineB := knownhosts.Line([]string{knownhosts.Normalize("10.0.0.1:22")}, b) + "\n"
	if len(lineB) != len(lineA) {
		t.Fatalf("test keys of different lengths")
	}
	if err := os.WriteFile(kh, []byte(lineB), 0o600); err != nil {
		t.Fatal(err)
	}
	check(b, true)
	check(a, false)
	if n := parses(); n != 2 {
		t.Errorf("a changed file parsed %d times in all, want 2", n)
	}
}

// A connection attempt waits for one of the MaxHandshakes slots, and its
// ConnectTimeout runs from when it has one: a thousand hosts at once must
// not all time out together on a busy machine. (Not parallel: the slots are
// the process's.)
func TestHandshakeSlots(t *testing.T) {
	env := newEnv(t, serverOptions{})
	cfg := env.cfg
	cfg.ConnectTimeout = 2 * time.Second
	for range MaxHandshakes {
		handshakes <- struct{}{}
	}
	done := make(chan error, 1)
	go func() {
		c, err := Dial(context.Background(), cfg)
		if err == nil {
			c.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("the dial did not wait for a slot: %v", err)
	case <-time.After(cfg.ConnectTimeout + time.Second): // past its timeout: it has not started
	}
	<-handshakes
	if err := <-done; err != nil {
		t.Fatalf("with a slot free: %v", err)
	}
	for range MaxHandshakes - 1 {
		<-handshakes
	}

	// Cancelled while waiting: the context's error.
	for range MaxHandshakes {
		handshakes <- struct{}{}
	}
	defer func() {
		for range MaxHandshakes {
			<-handshakes
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := Dial(ctx, cfg); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v", err)
	}
}
