package ssh

import (
	"errors"
	"fmt"
	"net"

	"github.com/melbahja/goph"
	gossh "golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
)

// credentials are the authentication methods of one Config, ready for
// repeated connection attempts.
type credentials struct {
	methods []gossh.AuthMethod
	names   []string // for AuthError
	close   func()   // releases the agent connection
}

// newCredentials loads the key file and connects to the agent. All public
// keys (key file first, then the agent's) go into ONE publickey method: the
// SSH client library tries each method name once, so a second publickey
// method would never be offered after the first failed.
func newCredentials(cfg Config) (*credentials, error) {
	cr := &credentials{close: func() {}}
	var signers []gossh.Signer
	if cfg.KeyFile != "" {
		s, err := goph.GetSigner(cfg.KeyFile, cfg.KeyPassphrase)
		if err != nil {
			var missing *gossh.PassphraseMissingError
			if errors.As(err, &missing) {
				return nil, fmt.Errorf("ssh: key file %s for %s is encrypted and no passphrase was given", cfg.KeyFile, cfg.Name)
			}
			return nil, fmt.Errorf("ssh: key file %s for %s: %w", cfg.KeyFile, cfg.Name, err)
		}
		signers = append(signers, s)
	}
	var ag agent.ExtendedAgent
	if cfg.UseAgent {
		if cfg.AgentSocket == "" {
			return nil, fmt.Errorf("ssh: %s: use of the ssh-agent requested but SSH_AUTH_SOCK is not set", cfg.Name)
		}
		conn, err := net.Dial("unix", cfg.AgentSocket)
		if err != nil {
			return nil, fmt.Errorf("ssh: %s: connect to ssh-agent: %w", cfg.Name, err)
		}
		cr.close = func() { conn.Close() }
		ag = agent.NewClient(conn)
	}
	if len(signers) > 0 || ag != nil {
		cr.methods = append(cr.methods, gossh.PublicKeysCallback(func() ([]gossh.Signer, error) {
			all := signers
			if ag != nil {
				as, err := ag.Signers()
				if err != nil {
					return nil, fmt.Errorf("ssh-agent: %w", err)
				}
				all = append(append([]gossh.Signer(nil), signers...), as...)
			}
			return all, nil
		}))
		cr.names = append(cr.names, "publickey")
	}
	if cfg.Password != "" {
		// password, then keyboard-interactive answering the password prompt
		// (PAM setups offer only the latter).
		cr.methods = append(cr.methods, goph.KeyboardInteractive(cfg.Password)...)
		cr.names = append(cr.names, "password", "keyboard-interactive")
	}
	return cr, nil
}
