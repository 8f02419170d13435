package ssh

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/gpukit/gpukit/pkg/redact"
	"github.com/melbahja/goph"
	gossh "golang.org/x/crypto/ssh"
)

// Client is one authenticated connection to one host. Every Run and Upload
// opens a session (channel) on it; up to Config.MaxSessions run at once. It
// is safe for concurrent use and satisfies engine.Executor.
type Client struct {
	conn *goph.Client
	cfg  Config
	red  *redact.Redactor // cfg's secrets
	jump *Client          // bastion connection this Client owns, closed with it

	sessions chan struct{} // semaphore of open sessions
	done     chan struct{} // closed by Close
	gone     chan struct{} // closed when the transport ended, for whatever reason
	wg       sync.WaitGroup

	mu   sync.Mutex
	lost error // why the connection died, when the keepalive found out

	closeOnce sync.Once
	closeErr  error
}

func newClient(sc *gossh.Client, cfg Config, red *redact.Redactor) *Client {
	c := &Client{
		conn: &goph.Client{Client: sc, Config: &goph.Config{
			User: cfg.User, Addr: cfg.Address, Port: uint(cfg.Port), Timeout: cfg.ConnectTimeout,
		}},
		cfg:      cfg,
		red:      red,
		sessions: make(chan struct{}, cfg.MaxSessions),
		done:     make(chan struct{}),
		gone:     make(chan struct{}),
	}
	go func() { _ = sc.Wait(); close(c.gone) }()
	if cfg.KeepaliveInterval > 0 {
		c.wg.Add(1)
		go c.keepalive(cfg.KeepaliveInterval)
	}
	return c
}

// Name is the host's name (Config.Name, or its address).
func (c *Client) Name() string { return c.cfg.Name }

// User is the login user.
func (c *Client) User() string { return c.cfg.User }

// Address is the host:port connected to.
func (c *Client) Address() string {
	return net.JoinHostPort(c.cfg.Address, strconv.Itoa(c.cfg.Port))
}

// Describe says what was negotiated, for the host's log: login, address,
// key exchange, host key type and cipher ("deploy@10.0.0.7:22 kex
// curve25519-sha256 hostkey ssh-ed25519 cipher aes128-gcm@openssh.com").
// Benchmarks read it to compare like with like.
func (c *Client) Describe() string {
	d := fmt.Sprintf("%s@%s", c.cfg.User, c.Address())
	if m, ok := c.conn.Client.Conn.(gossh.AlgorithmsConnMetadata); ok {
		a := m.Algorithms()
		d += fmt.Sprintf(" kex %s hostkey %s cipher %s", a.KeyExchange, a.HostKey, a.Read.Cipher)
	}
	if c.jump != nil {
		d += " via " + c.jump.Describe()
	}
	return d
}

// DialContext opens a TCP connection from the host to addr, tunnelled over
// this connection (direct-tcpip): for DialVia, or to reach a service that
// listens only on the host.
func (c *Client) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	select {
	case <-c.done:
		return nil, ErrClosed
	default:
	}
	conn, err := c.conn.DialContext(ctx, network, addr)
	if err != nil {
		return nil, fmt.Errorf("ssh: dial %s through %s: %w", addr, c.cfg.Name, c.lostCause(err))
	}
	return conn, nil
}

// Alive says whether the connection still stands: not closed, its
// transport not ended (the peer went away, the keepalive gave up). A
// bastion shared by many hosts is dialled again when it is not.
func (c *Client) Alive() bool {
	select {
	case <-c.gone:
		return false
	case <-c.done:
		return false
	default:
		return true
	}
}

// Close closes the connection (and the bastion connection Dial opened for
// it), ending any session still open. It is safe to call more than once;
// later calls return the first call's result.
func (c *Client) Close() error {
	c.closeOnce.Do(func() {
		close(c.done)
		err := c.conn.Close()
		if errors.Is(err, net.ErrClosed) {
			err = nil // the keepalive already closed a dead connection
		}
		c.wg.Wait()
		if c.jump != nil {
			err = errors.Join(err, c.jump.Close())
		}
		if err != nil {
			err = fmt.Errorf("ssh: close connection to %s: %w", c.cfg.Name, err)
		}
		c.closeErr = err
	})
	return c.closeErr
}

// keepalive sends keepalive@openssh.com every interval. A connection that
// does not answer within three intervals is closed, so that sessions on it
// fail instead of hanging on a host that went away.
func (c *Client) keepalive(interval time.Duration) {
	defer c.wg.Done()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-c.done:
			return
		case <-t.C:
		}
		reply := make(chan error, 1)
		go func() {
			_, _, err := c.conn.SendRequest("keepalive@openssh.com", true, nil)
			reply <- err
		}()
		timeout := time.NewTimer(3 * interval)
		select {
		case <-c.done:
			timeout.Stop()
			return
		case err := <-reply:
			timeout.Stop()
			if err != nil {
				c.setLost(fmt.Errorf("keepalive: %w", err))
				return
			}
		case <-timeout.C:
			c.setLost(fmt.Errorf("no keepalive reply within %s", 3*interval))
			c.conn.Close()
			return
		}
	}
}

func (c *Client) setLost(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lost == nil {
		c.lost = err
	}
}

// lostCause explains a failure of a session or channel: the client was
// closed, the keepalive found the connection dead, or err itself.
func (c *Client) lostCause(err error) error {
	select {
	case <-c.done:
		return ErrClosed
	default:
	}
	c.mu.Lock()
	lost := c.lost
	c.mu.Unlock()
	if lost != nil {
		return fmt.Errorf("%w: %w", errConnectionLost, lost)
	}
	return err
}

// acquire takes a session slot; release gives it back.
func (c *Client) acquire(ctx context.Context) (release func(), err error) {
	select {
	case <-c.done:
		return nil, ErrClosed
	default:
	}
	select {
	case c.sessions <- struct{}{}:
		return func() { <-c.sessions }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.done:
		return nil, ErrClosed
	}
}

// opened runs open - a channel or session setup that waits for the host's
// answer - without holding the caller past ctx or Close: when either ends
// first, whatever open still returns is handed to discard.
func opened[T any](ctx context.Context, done <-chan struct{}, open func() (T, error), discard func(T)) (T, error) {
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	go func() {
		v, err := open()
		ch <- result{v, err}
	}()
	abandon := func(err error) (T, error) {
		go func() {
			if r := <-ch; r.err == nil {
				discard(r.v)
			}
		}()
		var zero T
		return zero, err
	}
	select {
	case r := <-ch:
		return r.v, r.err
	case <-ctx.Done():
		return abandon(ctx.Err())
	case <-done:
		return abandon(ErrClosed)
	}
}
