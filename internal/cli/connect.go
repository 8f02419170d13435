package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
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

// dialer returns the engine's Dialer over pkg/ssh. Each host is dialled once
// per run; the engine keeps the connection for every step.
func (c *sshConfigs) dialer() engine.Dialer {
	return func(ctx context.Context, m inventory.Machine) (engine.Executor, error) {
		cfg, ok := c.byHost[m.Name]
		if !ok {
			return nil, fmt.Errorf("no SSH settings for host %s", m.Name)
		}
		return ssh.Dial(ctx, cfg)
	}
}
