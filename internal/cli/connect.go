package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	cryptossh "golang.org/x/crypto/ssh"
	"golang.org/x/term"

	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/ssh"
)

// connectOptions are the transport flags shared by every command that
// reaches hosts.
type connectOptions struct {
	acceptNewHostKeys bool
}

// sshConfigs turns every machine's effective SSH settings into transport
// configs, reading each secret once. It runs before any connection so that a
// missing secret is bad input (exit 2) and no host is touched. The returned
// secrets are for the redactor.
type sshConfigs struct {
	byHost  map[string]ssh.Config
	secrets []string
}

type secretSource struct {
	lookupEnv func(string) (string, bool)
	readFile  func(string) ([]byte, error)
	// prompt asks for a key passphrase on the terminal; nil when there is none.
	prompt func(keyFile string) (string, error)
}

func osSecrets(s Streams) secretSource {
	src := secretSource{lookupEnv: os.LookupEnv, readFile: os.ReadFile}
	if f, ok := s.In.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		src.prompt = func(keyFile string) (string, error) {
			fmt.Fprintf(s.Err, "Passphrase for %s: ", keyFile)
			b, err := term.ReadPassword(int(f.Fd()))
			fmt.Fprintln(s.Err)
			return string(b), err
		}
	}
	return src
}

func buildSSHConfigs(inv *inventory.Inventory, o connectOptions, src secretSource) (*sshConfigs, error) {
	out := &sshConfigs{byHost: map[string]ssh.Config{}}
	cache := map[inventory.SecretRef]string{}
	passphrases := map[string]string{} // key file -> prompted passphrase
	home, _ := src.lookupEnv("HOME")
	var errs []error
	resolve := func(m inventory.Machine, field string, ref *inventory.SecretRef) string {
		if ref == nil {
			return ""
		}
		if v, ok := cache[*ref]; ok {
			return v
		}
		v, err := ref.Resolve(src.lookupEnv, src.readFile)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: host %s: %s: %w", m.Pos, m.Name, field, err))
			return ""
		}
		cache[*ref] = v
		out.secrets = append(out.secrets, v)
		return v
	}
	for _, m := range inv.Machines {
		s := m.SSH
		cfg := ssh.Config{
			Name: m.Name, Address: m.Address, Port: s.Port, User: s.User,
			KeyFile:           expandHome(s.KeyFile, home),
			KeyPassphrase:     resolve(m, "ssh.keyPassphrase", s.KeyPassphrase),
			Password:          resolve(m, "ssh.password", s.Password),
			UseAgent:          s.Agent != nil && *s.Agent,
			KnownHostsFile:    expandHome(s.KnownHostsFile, home),
			AcceptNewHostKeys: o.acceptNewHostKeys,
			ConnectRetries:    2,
		}
		if s.ConnectTimeout != "" {
			d, err := time.ParseDuration(s.ConnectTimeout)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: host %s: ssh.connectTimeout: %w", m.Pos, m.Name, err))
			}
			cfg.ConnectTimeout = d
		}
		if s.Sudo != nil && s.Sudo.Password != nil {
			cfg.SudoPassword = resolve(m, "ssh.sudo.password", s.Sudo.Password)
		}
		if cfg.KeyFile != "" && cfg.KeyPassphrase == "" && src.prompt != nil {
			if p, ok := passphrases[cfg.KeyFile]; ok {
				cfg.KeyPassphrase = p
			} else if encryptedKey(cfg.KeyFile) {
				p, err := src.prompt(cfg.KeyFile)
				if err != nil {
					errs = append(errs, fmt.Errorf("passphrase for %s: %w", cfg.KeyFile, err))
				}
				passphrases[cfg.KeyFile] = p
				out.secrets = append(out.secrets, p)
				cfg.KeyPassphrase = p
			}
		}
		if b := s.Bastion; b != nil {
			cfg.Bastion = &ssh.Config{
				Name: "bastion " + b.Address, Address: b.Address, Port: b.Port, User: b.User,
				KeyFile: expandHome(b.KeyFile, home), Password: resolve(m, "ssh.bastion.password", b.Password),
				UseAgent: cfg.UseAgent, KnownHostsFile: cfg.KnownHostsFile, AcceptNewHostKeys: o.acceptNewHostKeys,
				ConnectTimeout: cfg.ConnectTimeout, ConnectRetries: cfg.ConnectRetries,
			}
			if cfg.Bastion.User == "" {
				cfg.Bastion.User = cfg.User
			}
			if cfg.Bastion.KeyFile == "" {
				cfg.Bastion.KeyFile = cfg.KeyFile
				cfg.Bastion.KeyPassphrase = cfg.KeyPassphrase
			}
		}
		out.byHost[m.Name] = cfg
	}
	if len(errs) > 0 {
		return nil, usage(errors.Join(errs...))
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

func expandHome(p, home string) string {
	if home != "" && (p == "~" || strings.HasPrefix(p, "~/")) {
		return filepath.Join(home, strings.TrimPrefix(p, "~"))
	}
	return p
}

// dialer connects hosts over pkg/ssh. Hosts behind the same bastion share
// one connection to it (DialVia), so 1000 hosts cost one bastion login, not
// 1000; the engine keeps each host's connection for every step.
type dialer struct {
	cfgs *sshConfigs

	mu    sync.Mutex
	jumps map[string]*jump
}

type jump struct {
	ready  chan struct{}
	client *ssh.Client
	err    error
}

func (c *sshConfigs) newDialer() *dialer { return &dialer{cfgs: c, jumps: map[string]*jump{}} }

func (d *dialer) dial(ctx context.Context, m inventory.Machine) (engine.Executor, error) {
	cfg, ok := d.cfgs.byHost[m.Name]
	if !ok {
		return nil, fmt.Errorf("no SSH settings for host %s", m.Name)
	}
	if cfg.Bastion == nil {
		return ssh.Dial(ctx, cfg)
	}
	j, err := d.jump(ctx, *cfg.Bastion)
	if err != nil {
		return nil, err
	}
	return ssh.DialVia(ctx, j, cfg)
}

// jump returns the shared connection to a bastion, dialling it once; a
// failed bastion fails every host behind it with the same error.
func (d *dialer) jump(ctx context.Context, b ssh.Config) (*ssh.Client, error) {
	key := fmt.Sprintf("%s@%s:%d", b.User, b.Address, b.Port)
	d.mu.Lock()
	j, found := d.jumps[key]
	if !found {
		j = &jump{ready: make(chan struct{})}
		d.jumps[key] = j
	}
	d.mu.Unlock()
	if !found {
		j.client, j.err = ssh.Dial(ctx, b)
		close(j.ready)
	}
	select {
	case <-j.ready:
		if j.err != nil {
			return nil, fmt.Errorf("bastion %s: %w", b.Address, j.err)
		}
		return j.client, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Close closes the bastion connections, after the run closed the hosts.
func (d *dialer) Close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, j := range d.jumps {
		<-j.ready
		if j.client != nil {
			j.client.Close()
		}
	}
}
