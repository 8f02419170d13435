package ssh

// An in-process SSH server for the unit tests: password, keyboard-interactive
// and public key auth, exec (bash -c, like sshd's login shell), the sftp
// subsystem, direct-tcpip (for bastion hops), keepalive accounting, and a
// stand-in sudo in the commands' PATH. Commands run as the test process's
// user in a temporary directory.

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"github.com/gpukit/gpukit/test/sshkey"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/pkg/sftp"
	gossh "golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// fakeSudo stands in for sudo: it accepts the options the transport uses,
// and with FAKE_SUDO_PASSWORD set requires that password on stdin, read one
// byte at a time up to the newline like the real one.
const fakeSudo = `#!/bin/bash
n=0 S=0
while [ $# -gt 0 ]; do
  case $1 in
    -n) n=1 ;; -S) S=1 ;; -k|-H) ;; -p) shift ;;
    --) shift; break ;;
    -*) echo "sudo: unknown option $1" >&2; exit 1 ;;
    *) break ;;
  esac
  shift
done
if [ -n "${FAKE_SUDO_PASSWORD:-}" ]; then
  want=$FAKE_SUDO_PASSWORD; unset FAKE_SUDO_PASSWORD
  [ $n = 0 ] || { echo "sudo: a password is required" >&2; exit 1; }
  [ $S = 1 ] || { echo "sudo: a terminal is required to read the password" >&2; exit 1; }
  for _ in 1 2 3; do
    IFS= read -r pw || { echo "sudo: no password was provided" >&2; exit 1; }
    [ "$pw" = "$want" ] && GPUKIT_FAKE_SUDO=1 exec "$@"
    echo "Sorry, try again." >&2
  done
  echo "sudo: 3 incorrect password attempts" >&2
  exit 1
fi
GPUKIT_FAKE_SUDO=1 exec "$@"
`

type serverOptions struct {
	// password accepted by password auth ("" disables it).
	password string
	// kiPassword accepted by keyboard-interactive auth ("" disables it).
	kiPassword string
	// authorized public keys.
	authorized []gossh.PublicKey
	// hostKeys; one ed25519 key is generated when empty.
	hostKeys []gossh.Signer
	// sudoPassword makes the stand-in sudo require this password.
	sudoPassword string
	// env is added to the login shell's environment (a UTF-8 locale, say).
	env []string
	// noSudo puts a sudo in PATH that fails: for root logins that must not use it.
	brokenSudo bool
	// ignoreKeepalives leaves keepalive requests unanswered.
	ignoreKeepalives bool
	// stallSessions never answers session channel requests (a hung host).
	stallSessions bool
}

type testServer struct {
	t        *testing.T
	opts     serverOptions
	ln       net.Listener
	host     string
	port     int
	dir      string // commands' working directory and HOME
	bin      string // prepended to PATH
	hostKey  gossh.PublicKey
	cfg      *gossh.ServerConfig
	accepted atomic.Int32 // TCP connections
	logins   atomic.Int32 // authenticated connections
	forwards atomic.Int32 // direct-tcpip channels
	alives   atomic.Int32 // keepalive requests
	active   atomic.Int32 // open session channels
	peak     atomic.Int32 // most session channels open at once
	ended    atomic.Int32 // authenticated connections that ended

	mu    sync.Mutex
	conns []net.Conn
}

func startServer(t *testing.T, opts serverOptions) *testServer {
	t.Helper()
	s := &testServer{t: t, opts: opts, dir: t.TempDir(), bin: t.TempDir()}
	sudo := fakeSudo
	if opts.brokenSudo {
		sudo = "#!/bin/sh\necho 'sudo must not be used here' >&2\nexit 99\n"
	}
	if err := os.WriteFile(filepath.Join(s.bin, "sudo"), []byte(sudo), 0o755); err != nil {
		t.Fatal(err)
	}
	if len(opts.hostKeys) == 0 {
		opts.hostKeys = []gossh.Signer{newSigner(t)}
		s.opts.hostKeys = opts.hostKeys
	}
	s.hostKey = opts.hostKeys[0].PublicKey()
	s.cfg = &gossh.ServerConfig{}
	for _, k := range opts.hostKeys {
		s.cfg.AddHostKey(k)
	}
	if opts.password != "" {
		s.cfg.PasswordCallback = func(_ gossh.ConnMetadata, pw []byte) (*gossh.Permissions, error) {
			if string(pw) == opts.password {
				return nil, nil
			}
			return nil, errors.New("wrong password")
		}
	}
	if opts.kiPassword != "" {
		s.cfg.KeyboardInteractiveCallback = func(_ gossh.ConnMetadata, ch gossh.KeyboardInteractiveChallenge) (*gossh.Permissions, error) {
			ans, err := ch("", "", []string{"Password: "}, []bool{false})
			if err != nil {
				return nil, err
			}
			if len(ans) == 1 && ans[0] == opts.kiPassword {
				return nil, nil
			}
			return nil, errors.New("wrong password")
		}
	}
	if len(opts.authorized) > 0 {
		s.cfg.PublicKeyCallback = func(_ gossh.ConnMetadata, key gossh.PublicKey) (*gossh.Permissions, error) {
			for _, a := range opts.authorized {
				if string(a.Marshal()) == string(key.Marshal()) {
					return nil, nil
				}
			}
			return nil, errors.New("unknown key")
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.ln = ln
	s.host = "127.0.0.1"
	s.port = ln.Addr().(*net.TCPAddr).Port
	go s.serve()
	t.Cleanup(s.stop)
	return s
}

func (s *testServer) addr() string { return net.JoinHostPort(s.host, strconv.Itoa(s.port)) }

// stop closes the listener and every connection (a host going away).
func (s *testServer) stop() {
	s.ln.Close()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.conns {
		c.Close()
	}
	s.conns = nil
}

// drop closes every connection and keeps listening (a bastion restarted).
func (s *testServer) drop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.conns {
		c.Close()
	}
	s.conns = nil
}

func (s *testServer) serve() {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.accepted.Add(1)
		s.mu.Lock()
		s.conns = append(s.conns, c)
		s.mu.Unlock()
		go s.handle(c)
	}
}

func (s *testServer) handle(nc net.Conn) {
	sc, chans, reqs, err := gossh.NewServerConn(nc, s.cfg)
	if err != nil {
		nc.Close()
		return
	}
	defer sc.Close()
	s.logins.Add(1)
	defer s.ended.Add(1)
	go func() {
		for r := range reqs {
			if r.Type == "keepalive@openssh.com" {
				s.alives.Add(1)
				if s.opts.ignoreKeepalives {
					continue
				}
			}
			if r.WantReply {
				r.Reply(false, nil)
			}
		}
	}()
	for nch := range chans {
		switch nch.ChannelType() {
		case "session":
			if s.opts.stallSessions {
				continue
			}
			go s.session(nch)
		case "direct-tcpip":
			go s.forward(nch)
		default:
			nch.Reject(gossh.UnknownChannelType, "unsupported")
		}
	}
}

func (s *testServer) forward(nch gossh.NewChannel) {
	var p struct {
		Host     string
		Port     uint32
		OrigHost string
		OrigPort uint32
	}
	if err := gossh.Unmarshal(nch.ExtraData(), &p); err != nil {
		nch.Reject(gossh.ConnectionFailed, "bad payload")
		return
	}
	c, err := net.Dial("tcp", net.JoinHostPort(p.Host, strconv.Itoa(int(p.Port))))
	if err != nil {
		nch.Reject(gossh.ConnectionFailed, err.Error())
		return
	}
	ch, reqs, err := nch.Accept()
	if err != nil {
		c.Close()
		return
	}
	s.forwards.Add(1)
	go gossh.DiscardRequests(reqs)
	go func() { io.Copy(ch, c); ch.CloseWrite() }()
	io.Copy(c, ch)
	c.Close()
	ch.Close()
}

func (s *testServer) session(nch gossh.NewChannel) {
	ch, reqs, err := nch.Accept()
	if err != nil {
		return
	}
	n := s.active.Add(1)
	// A session stops counting when its command has exited, before the
	// client hears so: a client that starts the next one at once must not
	// be seen over its limit.
	release := sync.OnceFunc(func() { s.active.Add(-1) })
	defer release()
	for {
		p := s.peak.Load()
		if n <= p || s.peak.CompareAndSwap(p, n) {
			break
		}
	}
	defer ch.Close()
	for r := range reqs {
		switch r.Type {
		case "exec":
			var p struct{ Command string }
			if err := gossh.Unmarshal(r.Payload, &p); err != nil {
				r.Reply(false, nil)
				continue
			}
			r.Reply(true, nil)
			go gossh.DiscardRequests(reqs)
			s.exec(ch, p.Command, release)
			return
		case "subsystem":
			var p struct{ Name string }
			if gossh.Unmarshal(r.Payload, &p) != nil || p.Name != "sftp" {
				r.Reply(false, nil)
				continue
			}
			r.Reply(true, nil)
			go gossh.DiscardRequests(reqs)
			srv, err := sftp.NewServer(ch, sftp.WithServerWorkingDirectory(s.dir))
			if err == nil {
				srv.Serve()
				srv.Close()
			}
			return
		default:
			if r.WantReply {
				r.Reply(r.Type == "env", nil)
			}
		}
	}
}

// exec runs command like sshd does (login shell -c command) and reports its
// exit status or signal; when the client closes the channel, the command's
// stdin ends, as with sshd.
func (s *testServer) exec(ch gossh.Channel, command string, exited func()) {
	cmd := exec.Command("bash", "-c", command)
	cmd.Dir = s.dir
	cmd.Env = append(os.Environ(), "HOME="+s.dir, "PATH="+s.bin+":"+os.Getenv("PATH"))
	if s.opts.sudoPassword != "" {
		cmd.Env = append(cmd.Env, "FAKE_SUDO_PASSWORD="+s.opts.sudoPassword)
	}
	cmd.Env = append(cmd.Env, s.opts.env...)
	cmd.Stdout = ch
	cmd.Stderr = ch.Stderr()
	cmd.WaitDelay = 3 * time.Second
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(ch.Stderr(), "start: %v\n", err)
		ch.SendRequest("exit-status", false, gossh.Marshal(struct{ Status uint32 }{127}))
		return
	}
	go func() {
		io.Copy(stdin, ch)
		stdin.Close()
	}()
	err = cmd.Wait()
	exited()
	var ee *exec.ExitError
	switch {
	case err == nil:
		ch.SendRequest("exit-status", false, gossh.Marshal(struct{ Status uint32 }{0}))
	case errors.As(err, &ee):
		ws := ee.Sys().(syscall.WaitStatus)
		if ws.Signaled() {
			ch.SendRequest("exit-signal", false, gossh.Marshal(struct {
				Signal     string
				CoreDumped bool
				Error      string
				Lang       string
			}{Signal: signalName(ws.Signal())}))
		} else {
			ch.SendRequest("exit-status", false, gossh.Marshal(struct{ Status uint32 }{uint32(ws.ExitStatus())}))
		}
	}
	ch.CloseWrite()
}

func signalName(s syscall.Signal) string {
	switch s {
	case syscall.SIGKILL:
		return "KILL"
	case syscall.SIGTERM:
		return "TERM"
	case syscall.SIGINT:
		return "INT"
	case syscall.SIGSEGV:
		return "SEGV"
	}
	return "USR1"
}

// newSigner is a fresh ed25519 key.
func newSigner(t testing.TB) gossh.Signer {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s, err := gossh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// writeKey writes a fresh ed25519 private key (encrypted when passphrase is
// set) and returns its path and public key.
func writeKey(t testing.TB, passphrase string) (string, gossh.PublicKey) {
	t.Helper()
	key, pub := sshkey.New(t, passphrase)
	path := filepath.Join(t.TempDir(), "id_ed25519")
	if err := os.WriteFile(path, key, 0o600); err != nil {
		t.Fatal(err)
	}
	return path, pub
}

// knownHostsFor writes a known_hosts file trusting s (under the [host]:port
// name knownhosts uses for it), optionally hashed.
func knownHostsFor(t testing.TB, hashed bool, servers ...*testServer) string {
	t.Helper()
	var b []byte
	for _, s := range servers {
		name := knownhosts.Normalize(s.addr())
		if hashed {
			name = knownhosts.HashHostname(name)
		}
		b = append(b, knownhosts.Line([]string{name}, s.hostKey)+"\n"...)
	}
	path := filepath.Join(t.TempDir(), "known_hosts")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// testEnv is a server that trusts one key, and a Config for it.
type testEnv struct {
	srv *testServer
	cfg Config
}

func newEnv(t *testing.T, opts serverOptions) testEnv {
	t.Helper()
	key, pub := writeKey(t, "")
	opts.authorized = append(opts.authorized, pub)
	srv := startServer(t, opts)
	return testEnv{srv: srv, cfg: Config{
		Name:              "node-1",
		Address:           srv.host,
		Port:              srv.port,
		User:              "root",
		KeyFile:           key,
		KnownHostsFile:    knownHostsFor(t, false, srv),
		ConnectTimeout:    5 * time.Second,
		KeepaliveInterval: -1,
	}}
}

func dialT(t *testing.T, cfg Config) *Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := Dial(ctx, cfg)
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func runT(t *testing.T, c *Client, cmd Command) Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := c.Run(ctx, cmd)
	if err != nil {
		t.Fatalf("Run %q: %v (stdout %q, stderr %q)", cmd.Name, err, res.Stdout, res.Stderr)
	}
	return res
}
