package ssh

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
)

// ErrClosed is returned by Run and Upload on a Client after Close.
var ErrClosed = errors.New("ssh: client is closed")

// HostKeyChangedError is a host that offered a key other than the one(s)
// recorded for it in known_hosts: a reinstalled host or a man in the middle.
// It is never retried and never overridden by AcceptNewHostKeys.
type HostKeyChangedError struct {
	Host    string // inventory name
	Address string // host:port as looked up in known_hosts
	// Want are the fingerprints on record (SHA256:...), Lines where they are
	// ("file:line"), index for index.
	Want  []string
	Lines []string
	// Got is the fingerprint the host offered, KeyType its type.
	Got     string
	KeyType string
	File    string // the known_hosts file
}

func (e *HostKeyChangedError) Error() string {
	var rec []string
	for i, w := range e.Want {
		if i < len(e.Lines) {
			rec = append(rec, fmt.Sprintf("%s (%s)", w, e.Lines[i]))
		} else {
			rec = append(rec, w)
		}
	}
	return fmt.Sprintf("ssh: HOST KEY CHANGED for %s (%s): it offered %s %s but known_hosts has %s; "+
		"someone may be intercepting the connection, or the host was reinstalled. "+
		"If you verified the new key out of band, remove the old entry (ssh-keygen -f %s -R %s) and connect again",
		e.Host, e.Address, e.KeyType, e.Got, strings.Join(rec, ", "), e.File, knownHostsPattern(e.Address))
}

// HostKeyRevokedError is a host that offered a key marked @revoked in
// known_hosts.
type HostKeyRevokedError struct {
	Host, Address, Got, Line string
}

func (e *HostKeyRevokedError) Error() string {
	return fmt.Sprintf("ssh: host key %s offered by %s (%s) is revoked (%s)", e.Got, e.Host, e.Address, e.Line)
}

// UnknownHostError is a host with no key in known_hosts while
// AcceptNewHostKeys is off.
type UnknownHostError struct {
	Host    string
	Address string // host:port as looked up in known_hosts
	// Fingerprint (SHA256:...) and KeyType of the key the host offered.
	Fingerprint string
	KeyType     string
	File        string // the known_hosts file searched
}

func (e *UnknownHostError) Error() string {
	h, p := splitHostPort(e.Address)
	return fmt.Sprintf("ssh: host %s (%s) is not in %s (it offered %s %s): "+
		"verify the fingerprint and add the key (ssh-keyscan -p %s %s >> %s), "+
		"or pass --accept-new-host-keys to trust it on first use",
		e.Host, e.Address, e.File, e.KeyType, e.Fingerprint, p, h, e.File)
}

// AuthError is a login (or, with Sudo set, a sudo password) the host
// refused. It is never retried: the same credentials would fail again, and
// repeated failures can lock the account.
type AuthError struct {
	Host    string
	Address string
	User    string
	// Methods are the SSH authentication methods offered to the host.
	Methods []string
	// Sudo is set when the login worked but sudo refused the password.
	Sudo bool
	Err  error
}

func (e *AuthError) Error() string {
	if e.Sudo {
		return fmt.Sprintf("ssh: sudo as %s on %s (%s) refused the sudo password: %v", e.User, e.Host, e.Address, e.Err)
	}
	return fmt.Sprintf("ssh: authentication as %s on %s (%s) failed (methods offered: %s): %v",
		e.User, e.Host, e.Address, strings.Join(e.Methods, ", "), e.Err)
}

func (e *AuthError) Unwrap() error { return e.Err }

// ConnectError is a connection to a host that could not be established
// after every allowed attempt.
type ConnectError struct {
	Host     string
	Address  string
	Attempts int
	Err      error
}

func (e *ConnectError) Error() string {
	n := ""
	if e.Attempts > 1 {
		n = fmt.Sprintf(" after %d attempts", e.Attempts)
	}
	return fmt.Sprintf("ssh: connect to %s (%s)%s: %v", e.Host, e.Address, n, e.Err)
}

func (e *ConnectError) Unwrap() error { return e.Err }

// NotSSHError is a port that answered with another protocol (a web
// server's error page, another service's greeting): the wrong port or the
// wrong host. Asking again gets the same answer, so it is not retried.
type NotSSHError struct {
	// Said is the first line the port sent, quoted for printing.
	Said string
}

func (e *NotSSHError) Error() string {
	return "the port answered but is not an SSH server: it said " + e.Said
}

// noBannerError is a port that accepted the connection and closed it before
// sending the SSH banner: a service that is not SSH, or an sshd refusing
// connections for now (MaxStartups under a large fan-out, a TCP wrapper).
// The second may pass, so it is retried.
type noBannerError struct{ err error }

func (e *noBannerError) Error() string {
	return "the port answered but closed the connection before sending an SSH banner: " +
		"it is not an SSH server, or sshd refused the connection (MaxStartups, TCP wrappers)"
}
func (e *noBannerError) Unwrap() error { return e.err }

// timeoutError is a connection attempt that ran past Config.ConnectTimeout.
type timeoutError struct{ stage string }

func (e *timeoutError) Error() string   { return "ssh: " + e.stage + " timed out" }
func (e *timeoutError) Timeout() bool   { return true }
func (e *timeoutError) Temporary() bool { return true }

// IsRetryable reports whether err is a transient connection failure (refused,
// reset, timed out, dropped) that a bounded retry of an idempotent step may
// overcome. Host key, authentication, cancellation, configuration errors,
// a name that does not resolve, a port that is not SSH and commands that ran
// and failed (*ExitError) are not retryable.
func IsRetryable(err error) bool {
	if err == nil {
		return false
	}
	var (
		changed *HostKeyChangedError
		revoked *HostKeyRevokedError
		unknown *UnknownHostError
		auth    *AuthError
		exit    *ExitError
		notSSH  *NotSSHError
		dns     *net.DNSError
	)
	switch {
	case errors.As(err, &changed), errors.As(err, &revoked), errors.As(err, &unknown),
		errors.As(err, &auth), errors.As(err, &exit), errors.As(err, &notSSH):
		return false
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded), errors.Is(err, ErrClosed):
		return false
	case errors.As(err, &dns) && dns.IsNotFound:
		// The resolver answered that the name does not exist: asking
		// again gets the same answer. A resolver that timed out or failed
		// is retried.
		return false
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	for _, e := range []error{io.EOF, io.ErrUnexpectedEOF, net.ErrClosed, syscall.ECONNREFUSED,
		syscall.ECONNRESET, syscall.ECONNABORTED, syscall.EPIPE, syscall.EHOSTUNREACH,
		syscall.ENETUNREACH, syscall.ETIMEDOUT, errConnectionLost} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// errConnectionLost marks a Run or Upload whose connection went away under it.
var errConnectionLost = errors.New("connection lost")
