package ssh

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	gossh "golang.org/x/crypto/ssh"

	"github.com/gpukit/gpukit/pkg/safetext"
)

// Dial connects and logs in to the host cfg describes, through cfg.Bastion
// when set, verifying its host key against cfg.KnownHostsFile. Connection
// failures are retried cfg.ConnectRetries times with a doubling backoff;
// host key and authentication failures are returned at once as
// *HostKeyChangedError, *HostKeyRevokedError, *UnknownHostError or
// *AuthError, other failures as *ConnectError. Cancelling ctx aborts the dial
// promptly; once Dial returns, ctx no longer affects the connection.
func Dial(ctx context.Context, cfg Config) (*Client, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	var jump *Client
	if cfg.Bastion != nil {
		jump, err = Dial(ctx, cfg.bastionConfig())
		if err != nil {
			return nil, fmt.Errorf("ssh: bastion for %s: %w", cfg.Name, err)
		}
	}
	c, err := dial(ctx, cfg, jump)
	if err != nil {
		if jump != nil {
			jump.Close()
		}
		return nil, err
	}
	c.jump = jump
	return c, nil
}

// DialVia is Dial through an existing connection to a jump host, which stays
// the caller's to close (after this Client): many hosts behind one bastion
// share its connection instead of opening one each. cfg.Bastion is ignored.
func DialVia(ctx context.Context, jump *Client, cfg Config) (*Client, error) {
	cfg.Bastion = nil
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	return dial(ctx, cfg, jump)
}

// dial is the retry loop around connectOnce. cfg has its defaults.
func dial(ctx context.Context, cfg Config, via *Client) (*Client, error) {
	creds, err := newCredentials(cfg)
	if err != nil {
		return nil, err
	}
	defer creds.close()
	hk := hostKeys{name: cfg.Name, file: cfg.KnownHostsFile, acceptNew: cfg.AcceptNewHostKeys}
	hostport := net.JoinHostPort(cfg.Address, strconv.Itoa(cfg.Port))
	backoff := cfg.RetryBackoff
	red := cfg.redactor()
	for attempt := 1; ; attempt++ {
		sc, err := connectOnce(ctx, cfg, via, hostport, hk, creds)
		if err == nil {
			return newClient(sc, cfg, red), nil
		}
		err = red.Error(err)
		if !isConnectFailure(err) {
			return nil, err // typed: names the host already
		}
		if ctx.Err() != nil || !IsRetryable(err) || hostAbsent(err) || attempt > cfg.ConnectRetries {
			return nil, &ConnectError{Host: cfg.Name, Address: hostport, Attempts: attempt, Err: err}
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, &ConnectError{Host: cfg.Name, Address: hostport, Attempts: attempt, Err: ctx.Err()}
		case <-t.C:
		}
		backoff = min(2*backoff, maxRetryBackoff)
	}
}

// hostAbsent is a host that is not there: the TCP connect timed out, or the
// network said no route (no ARP answer on a LAN). It is off or filtered, and
// retrying would multiply what a dead host costs the run (3 x 10 s) for
// nothing. Refused, reset and dropped handshakes (sshd starting, or its
// MaxStartups under a 1000-host fan-out) are retried. A name that does not
// resolve is not retried either (IsRetryable).
func hostAbsent(err error) bool {
	var te *timeoutError
	if errors.As(err, &te) && strings.HasPrefix(te.stage, "TCP connect") {
		return true
	}
	return errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH)
}

// bannerConn keeps the first bytes the server sent, so that a handshake
// that fails can say what answered: nothing (the connection was closed
// before an SSH banner), another protocol, or an SSH server. Its reads are
// buffered: x/crypto reads the server's version line one byte per read,
// which was about 40 system calls per host.
type bannerConn struct {
	net.Conn
	r    *bufio.Reader // over Conn; only the transport's reader goroutine reads
	full atomic.Bool   // head holds bannerBytes: later reads skip the lock
	mu   sync.Mutex
	head []byte
}

func newBannerConn(c net.Conn) *bannerConn {
	return &bannerConn{Conn: c, r: bufio.NewReaderSize(c, 4096)}
}

// bannerBytes is enough for the banner, or another protocol's first line.
const bannerBytes = 256

func (c *bannerConn) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if n > 0 && !c.full.Load() {
		c.mu.Lock()
		c.head = append(c.head, p[:min(n, bannerBytes-len(c.head))]...)
		c.full.Store(len(c.head) >= bannerBytes)
		c.mu.Unlock()
	}
	return n, err
}

// explain makes a failed handshake's error say what answered on the port:
// x/crypto reports a port that closes at once, or that speaks another
// protocol, as "ssh: handshake failed: EOF".
func (c *bannerConn) explain(err error) error {
	c.mu.Lock()
	head := string(c.head)
	c.mu.Unlock()
	if head == "" {
		if errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) {
			return &noBannerError{err: err}
		}
		return err
	}
	for line := range strings.SplitSeq(head, "\n") {
		if strings.HasPrefix(line, "SSH-") {
			return err // an SSH server: the library's error says what went wrong
		}
	}
	first, _, _ := strings.Cut(head, "\n")
	return &NotSSHError{Said: safetext.Quote(strings.TrimSuffix(first, "\r"))}
}

// isConnectFailure tells plain connection failures (wrapped in ConnectError)
// from the typed host key and authentication errors.
func isConnectFailure(err error) bool {
	var (
		changed *HostKeyChangedError
		revoked *HostKeyRevokedError
		unknown *UnknownHostError
		auth    *AuthError
	)
	return !errors.As(err, &changed) && !errors.As(err, &revoked) && !errors.As(err, &unknown) && !errors.As(err, &auth)
}

// handshakeState records, across the handshake's goroutines, how far host
// key verification got.
type handshakeState struct {
	mu       sync.Mutex
	verified bool
	err      error
}

func (s *handshakeState) set(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.err = err
	} else {
		s.verified = true
	}
}

func (s *handshakeState) get() (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.verified, s.err
}

// MaxHandshakes bounds the connection attempts (TCP, key exchange, login)
// in flight in this process. A thousand at once on a busy machine each get a
// thousandth of its CPU and all miss their ConnectTimeout together (at 500
// light lab hosts on 2 cores, 349 did); in slots, each takes its few
// milliseconds of CPU, and as many hosts still connect per second.
const MaxHandshakes = 64

var handshakes = make(chan struct{}, MaxHandshakes)

// connectOnce is one attempt: TCP (or a channel through via), handshake with
// host key verification, authentication; all within cfg.ConnectTimeout,
// which starts once the attempt has one of the MaxHandshakes slots.
func connectOnce(ctx context.Context, cfg Config, via *Client, hostport string, hk hostKeys, creds *credentials) (*gossh.Client, error) {
	algos, err := hk.algorithms(hostport)
	if err != nil {
		return nil, err
	}
	select {
	case handshakes <- struct{}{}:
		defer func() { <-handshakes }()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	var state handshakeState
	conf := &gossh.ClientConfig{
		User: cfg.User,
		Auth: creds.methods,
		HostKeyCallback: func(hostname string, remote net.Addr, key gossh.PublicKey) error {
			err := hk.callback(hostname, remote, key)
			state.set(err)
			return err
		},
		HostKeyAlgorithms: algos,
		Timeout:           cfg.ConnectTimeout,
	}
	actx, cancel := context.WithTimeout(ctx, cfg.ConnectTimeout)
	defer cancel()

	var raw net.Conn
	if via != nil {
		raw, err = via.DialContext(actx, "tcp", hostport)
	} else {
		var d net.Dialer
		raw, err = d.DialContext(actx, "tcp", hostport)
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		// The dialer enforces the context's deadline itself and may report
		// "i/o timeout" a moment before actx.Err() is set: both are the timeout.
		var ne net.Error
		if actx.Err() != nil || (errors.As(err, &ne) && ne.Timeout()) {
			return nil, &timeoutError{stage: fmt.Sprintf("TCP connect (%s)", cfg.ConnectTimeout)}
		}
		return nil, err
	}
	conn := newBannerConn(raw)
	// The handshake takes no context: closing the connection stops it.
	stop := context.AfterFunc(actx, func() { conn.Close() })
	sc, chans, reqs, err := gossh.NewClientConn(conn, hostport, conf)
	if !stop() {
		if err == nil {
			sc.Close()
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, conn.explain(&timeoutError{stage: fmt.Sprintf("SSH handshake and login (%s)", cfg.ConnectTimeout)})
	}
	if err != nil {
		verified, hkErr := state.get()
		if hkErr != nil {
			return nil, hkErr
		}
		if verified && isAuthFailure(err) {
			return nil, &AuthError{Host: cfg.Name, Address: hostport, User: cfg.User, Methods: creds.names, Err: err}
		}
		return nil, conn.explain(err)
	}
	return gossh.NewClient(sc, chans, reqs), nil
}

// isAuthFailure recognises the library's (untyped) authentication failures.
func isAuthFailure(err error) bool {
	m := err.Error()
	return strings.Contains(m, "unable to authenticate") ||
		strings.Contains(m, "no supported methods remain") ||
		strings.Contains(m, "Too many authentication failures")
}
