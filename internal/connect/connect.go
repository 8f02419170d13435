// Package connect turns an inventory's effective SSH settings into pkg/ssh
// configs and dials hosts for the engine. Every command that reaches hosts,
// and the lab tooling, connects through it.
package connect

import (
	"context"
	"errors"
	"fmt"
	"os"

	cryptossh "golang.org/x/crypto/ssh"

	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/ssh"
)

// Options are the transport choices of a run.
type Options struct {
	// AcceptNewHostKeys trusts hosts missing from known_hosts (TOFU).
	AcceptNewHostKeys bool
}

// Secrets says where secrets are read from.
type Secrets struct {
	LookupEnv func(string) (string, bool)
	ReadFile  func(string) ([]byte, error)
	// Prompt asks for a key passphrase on a terminal; nil when there is none.
	Prompt func(keyFile string) (string, error)
}

// OSSecrets reads the process environment and files, and never prompts.
func OSSecrets() Secrets { return Secrets{LookupEnv: os.LookupEnv, ReadFile: os.ReadFile} }

// Set is the transport config of every machine of an inventory, each secret
// read once. It is built before any connection, so that a missing secret is
// bad input and no host is touched.
type Set struct {
	byHost map[string]ssh.Config
	// Secrets are the values read, for the run's redactor.
	Secrets []string
}

// Configs builds the Set of inv from each machine's Access, which the
// inventory has already merged and defaulted: this maps it, reads the
// secrets (each once) and expands "~". Its error lists every secret or path
// that could not be read, each with the host and inventory position.
func Configs(inv *inventory.Inventory, o Options, src Secrets) (*Set, error) {
	out := &Set{byHost: map[string]ssh.Config{}}
	cache := map[inventory.SecretRef]string{}
	passphrases := map[string]string{} // key file -> prompted passphrase
	var errs []error
	resolve := func(m inventory.Machine, field string, ref *inventory.SecretRef) string {
		if ref == nil {
			return ""
		}
		if v, ok := cache[*ref]; ok {
			return v
		}
		v, err := ref.Resolve(src.LookupEnv, src.ReadFile)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: host %s: %s: %w", m.Pos, m.Name, field, err))
			return ""
		}
		cache[*ref] = v
		out.Secrets = append(out.Secrets, v)
		return v
	}
	expand := func(m inventory.Machine, field, path string) string {
		p, err := inventory.ExpandHome(path, src.LookupEnv)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: host %s: %s: %w", m.Pos, m.Name, field, err))
		}
		return p
	}
	checked := map[string]bool{} // known_hosts files
	knownHosts := func(m inventory.Machine, path string) string {
		p := expand(m, "ssh.knownHostsFile", path)
		if p != "" && !checked[p] {
			checked[p] = true
			if err := ssh.CheckKnownHostsFile(p); err != nil {
				errs = append(errs, fmt.Errorf("%s: host %s: ssh.knownHostsFile: %w", m.Pos, m.Name, err))
			}
		}
		return p
	}
	prompt := func(keyFile string) string {
		if keyFile == "" || src.Prompt == nil {
			return ""
		}
		if p, ok := passphrases[keyFile]; ok {
			return p
		}
		if !encryptedKey(keyFile) {
			passphrases[keyFile] = "" // read once, not once per host
			return ""
		}
		p, err := src.Prompt(keyFile)
		if err != nil {
			errs = append(errs, fmt.Errorf("passphrase for %s: %w", keyFile, err))
		}
		passphrases[keyFile] = p
		out.Secrets = append(out.Secrets, p)
		return p
	}
	for _, m := range inv.Machines {
		a := m.Access
		cfg := ssh.Config{
			Name: m.Name, Address: m.Address, Port: a.Port, User: a.User,
			KeyFile:           expand(m, "ssh.keyFile", a.KeyFile),
			KeyPassphrase:     resolve(m, "ssh.keyPassphrase", a.KeyPassphrase),
			Password:          resolve(m, "ssh.password", a.Password),
			UseAgent:          a.Agent,
			KnownHostsFile:    knownHosts(m, a.KnownHostsFile),
			AcceptNewHostKeys: o.AcceptNewHostKeys,
			ConnectTimeout:    a.ConnectTimeout,
			ConnectRetries:    2,
			Sudo:              ssh.SudoNever,
			SudoPassword:      resolve(m, "ssh.sudo.password", a.SudoPassword),
		}
		if a.Sudo {
			cfg.Sudo = ssh.SudoAlways
		}
		if cfg.KeyPassphrase == "" {
			cfg.KeyPassphrase = prompt(cfg.KeyFile)
		}
		if b := a.Bastion; b != nil {
			bc := &ssh.Config{
				Name: "bastion " + b.Address, Address: b.Address, Port: b.Port, User: b.User,
				KeyFile:       expand(m, "ssh.bastion.keyFile", b.KeyFile),
				KeyPassphrase: resolve(m, "ssh.keyPassphrase", b.KeyPassphrase),
				Password:      resolve(m, "ssh.bastion.password", b.Password),
				UseAgent:      cfg.UseAgent, KnownHostsFile: cfg.KnownHostsFile, AcceptNewHostKeys: o.AcceptNewHostKeys,
				ConnectTimeout: cfg.ConnectTimeout, ConnectRetries: cfg.ConnectRetries,
			}
			if bc.KeyPassphrase == "" {
				bc.KeyPassphrase = prompt(bc.KeyFile)
			}
			cfg.Bastion = bc
		}
		out.byHost[m.Name] = cfg
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// encryptedKey reports whether the key file needs a passphrase; unreadable
// or invalid keys are left for the transport to report per host.
func encryptedKey(path string) bool {
	b, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	_, err = cryptossh.ParsePrivateKey(b)
	var missing *cryptossh.PassphraseMissingError
	return errors.As(err, &missing)
}

// Dialer connects hosts over pkg/ssh. Hosts behind the same bastion share
// one connection to it (DialVia), so 1000 hosts cost one bastion login, not
// 1000; the engine keeps each host's connection for every step.
type Dialer struct {
	cfgs *Set

	jumps ssh.Jumps
}

// NewDialer returns a Dialer for the machines of s; Close it after the run.
func (s *Set) NewDialer() *Dialer { return &Dialer{cfgs: s} }

// Dial is an engine.Dialer.
func (d *Dialer) Dial(ctx context.Context, m inventory.Machine) (engine.Executor, error) {
	cfg, ok := d.cfgs.byHost[m.Name]
	if !ok {
		return nil, fmt.Errorf("no SSH settings for host %s", m.Name)
	}
	if cfg.Bastion == nil {
		return ssh.Dial(ctx, cfg)
	}
	j, err := d.jumps.Dial(ctx, *cfg.Bastion)
	if err != nil {
		return nil, err
	}
	return ssh.DialVia(ctx, j, cfg)
}

// Close closes the bastion connections, after the run closed the hosts.
func (d *Dialer) Close() { d.jumps.Close() }
