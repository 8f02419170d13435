package inventory

import (
	"cmp"
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
		User:           cmp.Or(s.User, DefaultSSHUser),
		Port:           cmp.Or(s.Port, DefaultSSHPort),
		KeyFile:        s.KeyFile,
		KeyPassphrase:  cloneSecret(s.KeyPassphrase),
		Agent:          s.Agent != nil && *s.Agent,
		Password:       cloneSecret(s.Password),
		KnownHostsFile: cmp.Or(s.KnownHostsFile, DefaultKnownHostsFile),
	}
	if d, err := time.ParseDuration(cmp.Or(s.ConnectTimeout, DefaultSSHConnectTimeout)); err == nil && d > 0 {
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
		ba := &BastionAccess{Address: b.Address, Port: cmp.Or(b.Port, DefaultSSHPort), User: cmp.Or(b.User, a.User),
			KeyFile: b.KeyFile, Password: cloneSecret(b.Password)}
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
	if host == nil {
		return spec
	}
	h := *host
	return SSH{
		User:           cmp.Or(h.User, spec.User),
		Port:           cmp.Or(h.Port, spec.Port),
		KeyFile:        cmp.Or(h.KeyFile, spec.KeyFile),
		KeyPassphrase:  cmp.Or(h.KeyPassphrase, spec.KeyPassphrase),
		Agent:          cmp.Or(h.Agent, spec.Agent),
		Password:       cmp.Or(h.Password, spec.Password),
		KnownHostsFile: cmp.Or(h.KnownHostsFile, spec.KnownHostsFile),
		Bastion:        cmp.Or(h.Bastion, spec.Bastion),
		Sudo:           cmp.Or(h.Sudo, spec.Sudo),
		ConnectTimeout: cmp.Or(h.ConnectTimeout, spec.ConnectTimeout),
	}
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
