// Package connect turns an inventory's effective SSH settings into pkg/ssh
// configs and dials hosts for the engine. Every command that reaches hosts,
// and the lab tooling, connects through it.
package connect

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"time"

	cryptossh "golang.org/x/crypto/ssh"

	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/safetext"
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
// read once. It is built before any connection, so that a missing secret,
// key file or agent is bad input and no host is touched.
type Set struct {
	byHost map[string]ssh.Config
	// Secrets are the values read, for the run's redactor.
	Secrets []string
	// Notes are what the run does differently from what the inventory
	// says, and why (ssh.agent without an agent, a key file logs in
	// instead): the operator is told, nothing failed.
	Notes []string
}

// Configs builds the Set of inv from each machine's Access, which the
// inventory has already merged and defaulted: this maps it, reads the
// secrets (each once) and expands "~". It also checks, on this machine,
// what the logins need - each key file readable and a private key (its
// passphrase asked for or read), the ssh-agent when ssh.agent is set - as
// OpenSSH would find out at its first login, but once instead of once per
// host. Its error lists every secret, path, key or agent that cannot be
// used, each with the host and inventory position.
func Configs(inv *inventory.Inventory, o Options, src Secrets) (*Set, error) {
	out := &Set{byHost: map[string]ssh.Config{}}
	cache := map[inventory.SecretRef]string{}
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
	keys := &keyFiles{src: src, byPath: map[string]*keyFile{}}
	// key checks a key file and returns the passphrase it needs; usable is
	// false when there is no key or it cannot be used (reported once per
	// file, at the first host that names it).
	key := func(m inventory.Machine, field, path, passphrase string) (string, bool) {
		if path == "" {
			return passphrase, false
		}
		k := keys.check(path, passphrase)
		if k.err != nil && !k.reported {
			k.reported = true
			errs = append(errs, fmt.Errorf("%s: host %s: %s: %w", m.Pos, m.Name, field, k.err))
		}
		if k.passphrase != "" && passphrase == "" {
			passphrase = k.passphrase
			if !slices.Contains(out.Secrets, passphrase) {
				out.Secrets = append(out.Secrets, passphrase)
			}
		}
		return passphrase, k.err == nil
	}
	var (
		agentChecked   bool
		agentErr       error
		agentSocket    string
		skipped        hostList // log in without the missing agent
		stranded       hostList // no agent, and no other way to log in
		noLogin        hostList // no way to log in configured at all
		noBastionLogin hostList
	)
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
		var keyOK bool
		cfg.KeyPassphrase, keyOK = key(m, "ssh.keyFile", cfg.KeyFile, cfg.KeyPassphrase)
		if cfg.UseAgent {
			if !agentChecked {
				agentChecked = true
				agentSocket, _ = src.LookupEnv("SSH_AUTH_SOCK")
				agentErr = agentProblem(agentSocket)
			}
			cfg.AgentSocket = agentSocket
			if agentErr != nil {
				// As OpenSSH does: an agent that is not there is skipped
				// when another way to log in is configured.
				cfg.UseAgent = false
				switch {
				case keyOK || cfg.Password != "":
					skipped.add(m)
				case cfg.KeyFile == "": // a key that cannot be used is reported already
					stranded.add(m)
				}
			}
		} else if cfg.KeyFile == "" && cfg.Password == "" {
			noLogin.add(m)
		}
		if b := a.Bastion; b != nil {
			bc := &ssh.Config{
				Name: "bastion " + b.Address, Address: b.Address, Port: b.Port, User: b.User,
				KeyFile:       expand(m, "ssh.bastion.keyFile", b.KeyFile),
				KeyPassphrase: resolve(m, "ssh.keyPassphrase", b.KeyPassphrase),
				Password:      resolve(m, "ssh.bastion.password", b.Password),
				UseAgent:      cfg.UseAgent, AgentSocket: cfg.AgentSocket,
				KnownHostsFile: cfg.KnownHostsFile, AcceptNewHostKeys: o.AcceptNewHostKeys,
				ConnectTimeout: cfg.ConnectTimeout, ConnectRetries: cfg.ConnectRetries,
			}
			bc.KeyPassphrase, _ = key(m, "ssh.bastion.keyFile", bc.KeyFile, bc.KeyPassphrase)
			if bc.KeyFile == "" && bc.Password == "" && !bc.UseAgent && !slices.Contains(stranded.names, m.Name) {
				noBastionLogin.add(m)
			}
			cfg.Bastion = bc
		}
		out.byHost[m.Name] = cfg
	}
	if len(stranded.names) > 0 {
		errs = append(errs, fmt.Errorf("%s: ssh.agent: %v, and no ssh.keyFile or ssh.password to log in with instead: "+
			"start ssh-agent and ssh-add your key, or set ssh.keyFile", stranded, agentErr))
	}
	if len(noLogin.names) > 0 {
		errs = append(errs, fmt.Errorf("%s: no way to log in: set ssh.keyFile, ssh.password or ssh.agent: true", noLogin))
	}
	if len(noBastionLogin.names) > 0 {
		errs = append(errs, fmt.Errorf("%s: ssh.bastion: no way to log in to the bastion: set its keyFile or password, or ssh.agent: true with an agent running", noBastionLogin))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if len(skipped.names) > 0 {
		out.Notes = append(out.Notes, fmt.Sprintf("ssh.agent: %v: %s logs in with its key file or password only", agentErr, skipped.hosts()))
	}
	return out, nil
}

// hostList gathers the hosts that share one problem, so that it is said
// once, at the first of them, not once per host of a 1000-host inventory.
type hostList struct {
	first inventory.Machine
	names []string
}

func (l *hostList) add(m inventory.Machine) {
	if len(l.names) == 0 {
		l.first = m
	}
	l.names = append(l.names, m.Name)
}

// hosts is "host gpu-1 (and 2 more)".
func (l hostList) hosts() string {
	s := "host " + l.first.Name
	if n := len(l.names); n > 1 {
		s += fmt.Sprintf(" (and %d more)", n-1)
	}
	return s
}

// String is the inventory position and hosts of the problem.
func (l hostList) String() string { return fmt.Sprintf("%s: %s", l.first.Pos, l.hosts()) }

// agentProblem says why the ssh-agent at socket cannot be used, nil when it
// can: the socket is connected to and closed, as a login would.
func agentProblem(socket string) error {
	if socket == "" {
		return errors.New("no ssh-agent to use (SSH_AUTH_SOCK is not set)")
	}
	c, err := net.DialTimeout("unix", socket, 2*time.Second)
	if err != nil {
		return fmt.Errorf("no ssh-agent answers at SSH_AUTH_SOCK: %w", err)
	}
	c.Close()
	return nil
}

// keyFiles checks each private key a run logs in with once, however many
// hosts name it.
type keyFiles struct {
	src    Secrets
	byPath map[string]*keyFile
}

type keyFile struct {
	// passphrase is the one prompted for, when the inventory gives none.
	passphrase string
	err        error
	reported   bool
}

// check reads and parses the key at path with passphrase (prompting for
// one on a terminal when the key is encrypted and none is given).
func (k *keyFiles) check(path, passphrase string) *keyFile {
	id := path + "\x00" + passphrase
	if f, ok := k.byPath[id]; ok {
		return f
	}
	f := &keyFile{}
	k.byPath[id] = f
	b, err := k.src.ReadFile(path)
	if err != nil {
		f.err = err // names the file
		return f
	}
	_, err = cryptossh.ParsePrivateKey(b)
	var missing *cryptossh.PassphraseMissingError
	switch {
	case err == nil:
		return f
	case !errors.As(err, &missing):
		f.err = fmt.Errorf("%s is not a private key OpenSSH can use: %w", safetext.Name(path), err)
		return f
	}
	if passphrase == "" && k.src.Prompt != nil {
		if passphrase, err = k.src.Prompt(path); err != nil {
			f.err = fmt.Errorf("passphrase for %s: %w", safetext.Name(path), err)
			return f
		}
		f.passphrase = passphrase
	}
	if passphrase == "" {
		f.err = fmt.Errorf("%s is encrypted: set ssh.keyPassphrase (env or file), or run gpukit on a terminal to be asked for it", safetext.Name(path))
		return f
	}
	if _, err := cryptossh.ParsePrivateKeyWithPassphrase(b, []byte(passphrase)); err != nil {
		f.err = fmt.Errorf("%s: the passphrase does not decrypt it: %w", safetext.Name(path), err)
	}
	return f
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
