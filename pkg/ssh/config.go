package ssh

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/gpukit/gpukit/pkg/redact"
)

// Defaults applied by Dial to zero fields of a Config.
const (
	DefaultPort              = 22
	DefaultUser              = "root"
	DefaultConnectTimeout    = 10 * time.Second
	DefaultKeepaliveInterval = 30 * time.Second
	DefaultRetryBackoff      = 500 * time.Millisecond
	DefaultMaxSessions       = 8
	// maxRetryBackoff caps the doubling backoff between connect attempts.
	maxRetryBackoff = 10 * time.Second
)

// Config says how to reach and log in to one host.
type Config struct {
	// Name is the host's name in the inventory; errors use it.
	Name string
	// Address is the host's IP address or DNS name, without port.
	Address string
	// Port defaults to 22.
	Port int
	// User is the login user; defaults to root.
	User string

	// KeyFile is a private key (OpenSSH or PEM), optionally encrypted with
	// KeyPassphrase.
	KeyFile       string
	KeyPassphrase string
	// Password enables password and keyboard-interactive authentication.
	Password string
	// UseAgent offers the keys of the ssh-agent at AgentSocket (default
	// $SSH_AUTH_SOCK).
	UseAgent    bool
	AgentSocket string

	// KnownHostsFile holds the trusted host keys; defaults to
	// ~/.ssh/known_hosts. Hashed entries and [host]:port entries are supported.
	KnownHostsFile string
	// AcceptNewHostKeys trusts a host whose key is not yet known and records
	// the key in KnownHostsFile (trust on first use, like OpenSSH's
	// StrictHostKeyChecking=accept-new). A key that differs from a recorded
	// one is refused regardless.
	AcceptNewHostKeys bool

	// Bastion, when set, is the jump host the connection to this host goes
	// through. Its empty KnownHostsFile is taken from this Config; nothing
	// else is inherited.
	Bastion *Config

	// Sudo says when commands that ask for root (Command.Sudo, File.Sudo)
	// go through sudo; the zero value does so unless the user is root.
	Sudo SudoMode
	// SudoPassword is the login user's sudo password; empty means NOPASSWD
	// sudo (or a root login, which needs no sudo).
	SudoPassword string

	// ConnectTimeout bounds one connection attempt: TCP connect, SSH
	// handshake and authentication. Defaults to 10s.
	ConnectTimeout time.Duration
	// KeepaliveInterval is how often keepalive@openssh.com is sent; a
	// connection that misses three is closed. Defaults to 30s; negative
	// disables keepalives.
	KeepaliveInterval time.Duration
	// ConnectRetries is how many times a failed connection attempt is tried
	// again (0: once only). Authentication and host key failures are never
	// retried.
	ConnectRetries int
	// RetryBackoff is the wait before the first retry; it doubles per retry
	// up to 10s. Defaults to 500ms.
	RetryBackoff time.Duration
	// MaxSessions bounds concurrent sessions (Run, Upload) on the connection,
	// below OpenSSH's default MaxSessions of 10. Defaults to 8.
	MaxSessions int
}

// withDefaults returns c with zero fields defaulted, or an error naming what
// is missing. It never touches the network.
func (c Config) withDefaults() (Config, error) {
	if c.Address == "" {
		return c, errors.New("ssh: config: address is empty")
	}
	if c.Name == "" {
		c.Name = c.Address
	}
	if c.Port == 0 {
		c.Port = DefaultPort
	}
	if c.Port < 0 || c.Port > 65535 {
		return c, fmt.Errorf("ssh: config for %s: port %d out of range", c.Name, c.Port)
	}
	if c.User == "" {
		c.User = DefaultUser
	}
	if c.KeyFile == "" && c.Password == "" && !c.UseAgent {
		return c, fmt.Errorf("ssh: config for %s: no authentication method: set a key file, a password or use the agent", c.Name)
	}
	if c.KnownHostsFile == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return c, fmt.Errorf("ssh: config for %s: no known_hosts file given and no home directory: %w", c.Name, err)
		}
		c.KnownHostsFile = filepath.Join(home, ".ssh", "known_hosts")
	}
	if c.UseAgent && c.AgentSocket == "" {
		c.AgentSocket = os.Getenv("SSH_AUTH_SOCK")
	}
	if c.ConnectTimeout <= 0 {
		c.ConnectTimeout = DefaultConnectTimeout
	}
	if c.KeepaliveInterval == 0 {
		c.KeepaliveInterval = DefaultKeepaliveInterval
	}
	if c.ConnectRetries < 0 {
		c.ConnectRetries = 0
	}
	if c.RetryBackoff <= 0 {
		c.RetryBackoff = DefaultRetryBackoff
	}
	if c.MaxSessions <= 0 {
		c.MaxSessions = DefaultMaxSessions
	}
	return c, nil
}

// bastionConfig is the jump host's Config with what it inherits from c.
func (c Config) bastionConfig() Config {
	b := *c.Bastion
	if b.KnownHostsFile == "" {
		b.KnownHostsFile = c.KnownHostsFile
	}
	return b
}

// secrets are the values that must never show in an error.
func (c Config) secrets() []string {
	s := []string{c.Password, c.SudoPassword, c.KeyPassphrase}
	if c.Bastion != nil {
		s = append(s, c.Bastion.secrets()...)
	}
	return s
}

// redactor removes c's secrets from what the transport reports.
func (c Config) redactor() *redact.Redactor { return redact.New(c.secrets()...) }

// SudoMode is when sudo is used for commands that need root.
type SudoMode int

const (
	// SudoUnlessRoot uses sudo unless the login user is root.
	SudoUnlessRoot SudoMode = iota
	// SudoAlways uses sudo, also for root (a site policy that logs sudo).
	SudoAlways
	// SudoNever runs everything as the login user, who must be root or
	// root-equivalent (uid 0 under another name).
	SudoNever
)

// useSudo reports whether a command that needs root goes through sudo.
func (c Config) useSudo() bool {
	switch c.Sudo {
	case SudoAlways:
		return true
	case SudoNever:
		return false
	}
	return c.User != "root"
}
