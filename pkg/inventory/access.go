package inventory

import (
	"errors"
	"strings"
	"time"

	"github.com/gpukit/gpukit/pkg/safetext"
)

// Access is how gpukit reaches one machine and becomes root on it: spec.ssh
// with the host's overrides, every default applied and every value parsed.
// It is the one place these settings are decided; the transport
// (internal/connect) maps them to pkg/ssh without defaulting again.
// Secrets stay references: they are read only when a command connects.
type Access struct {
	User string
	Port int
	// KeyFile, KnownHostsFile: as written; "~/" is the operator's home
	// directory (ExpandHome, when connecting).
	KeyFile        string
	KeyPassphrase  *SecretRef
	Agent          bool
	Password       *SecretRef
	KnownHostsFile string
	ConnectTimeout time.Duration
	// Sudo runs the commands that need root through sudo: spec.ssh.sudo.enabled,
	// which defaults to true for any user but root.
	Sudo         bool
	SudoPassword *SecretRef
	// Bastion is the jump host, nil for a direct connection.
	Bastion *BastionAccess
}

// BastionAccess is how the jump host of a machine is reached. User, key and
// passphrase default to the machine's (as ssh -J does); the agent, the
// known_hosts file and the connect timeout are always the machine's.
type BastionAccess struct {
	Address       string
	Port          int
	User          string
	KeyFile       string
	KeyPassphrase *SecretRef
	Password      *SecretRef
}

// access resolves the merged ssh block of a machine (mergeSSH). A connect
// timeout that does not parse is left zero: validation reports it, and the
// inventory does not load.
func access(s SSH) Access {
	a := Access{
		User:           s.User,
		Port:           s.Port,
		KeyFile:        s.KeyFile,
		KeyPassphrase:  cloneSecret(s.KeyPassphrase),
		Agent:          s.Agent != nil && *s.Agent,
		Password:       cloneSecret(s.Password),
		KnownHostsFile: s.KnownHostsFile,
	}
	setDefault(&a.User, DefaultSSHUser)
	if a.Port == 0 {
		a.Port = DefaultSSHPort
	}
	setDefault(&a.KnownHostsFile, DefaultKnownHostsFile)
	timeout := s.ConnectTimeout
	setDefault(&timeout, DefaultSSHConnectTimeout)
	if d, err := time.ParseDuration(timeout); err == nil && d > 0 {
		a.ConnectTimeout = d
	}
	a.Sudo = a.User != "root"
	if s.Sudo != nil {
		if s.Sudo.Enabled != nil {
			a.Sudo = *s.Sudo.Enabled
		}
		a.SudoPassword = cloneSecret(s.Sudo.Password)
	}
	if b := s.Bastion; b != nil {
		ba := &BastionAccess{Address: b.Address, Port: b.Port, User: b.User, KeyFile: b.KeyFile, Password: cloneSecret(b.Password)}
		if ba.Port == 0 {
			ba.Port = DefaultSSHPort
		}
		setDefault(&ba.User, a.User)
		if ba.KeyFile == "" || ba.KeyFile == a.KeyFile {
			// A jump host is usually reached with the same account and key
			// as the hosts behind it; the key's passphrase comes with it.
			ba.KeyFile = a.KeyFile
			ba.KeyPassphrase = cloneSecret(a.KeyPassphrase)
		}
		a.Bastion = ba
	}
	return a
}

// mergeSSH is spec.ssh, then the host's overrides field by field (a nested
// block such as bastion or sudo counts as one field and replaces the
// inherited one whole).
func mergeSSH(spec SSH, host *SSH) SSH {
	s := spec
	if host == nil {
		return s
	}
	h := *host
	if h.User != "" {
		s.User = h.User
	}
	if h.Port != 0 {
		s.Port = h.Port
	}
	if h.KeyFile != "" {
		s.KeyFile = h.KeyFile
	}
	if h.KeyPassphrase != nil {
		s.KeyPassphrase = h.KeyPassphrase
	}
	if h.Agent != nil {
		s.Agent = h.Agent
	}
	if h.Password != nil {
		s.Password = h.Password
	}
	if h.KnownHostsFile != "" {
		s.KnownHostsFile = h.KnownHostsFile
	}
	if h.Bastion != nil {
		s.Bastion = h.Bastion
	}
	if h.Sudo != nil {
		s.Sudo = h.Sudo
	}
	if h.ConnectTimeout != "" {
		s.ConnectTimeout = h.ConnectTimeout
	}
	return s
}

// ExpandHome resolves a leading "~" or "~/" against $HOME as lookupEnv sees
// it: the one ~ expander for key files, known_hosts files and secret files.
// Other paths are returned unchanged.
func ExpandHome(path string, lookupEnv func(string) (string, bool)) (string, error) {
	if path != "~" && !strings.HasPrefix(path, "~/") {
		return path, nil
	}
	home, ok := lookupEnv("HOME")
	if !ok || home == "" {
		return "", errors.New(safetext.Name(path) + ": $HOME is not set to expand ~")
	}
	return strings.TrimSuffix(home, "/") + strings.TrimPrefix(path, "~"), nil
}

func cloneSecret(r *SecretRef) *SecretRef {
	if r == nil {
		return nil
	}
	c := *r
	return &c
}
