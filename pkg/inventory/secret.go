package inventory

import (
	"errors"
	"fmt"
	"strings"

	"github.com/gpukit/gpukit/pkg/safetext"
)

// Resolve returns the secret. Load never calls it: secrets are read only when
// a connection needs them, through the functions given (os.LookupEnv and
// os.ReadFile in the binary, fakes in tests). A file path starting with "~/"
// is taken relative to $HOME as seen by lookupEnv. Errors name the source,
// never the secret.
func (r *SecretRef) Resolve(lookupEnv func(string) (string, bool), readFile func(string) ([]byte, error)) (string, error) {
	if r == nil {
		return "", errors.New("no secret configured")
	}
	if err := r.checkSources(); err != nil {
		return "", err
	}
	switch {
	case r.Env != "":
		v, ok := lookupEnv(r.Env)
		if !ok {
			return "", fmt.Errorf("secret from environment variable %s: not set", safetext.Name(r.Env))
		}
		if v == "" {
			return "", fmt.Errorf("secret from environment variable %s: empty", safetext.Name(r.Env))
		}
		return v, nil
	case r.File != "":
		path, err := ExpandHome(r.File, lookupEnv)
		if err != nil {
			return "", fmt.Errorf("secret file %s: %w", safetext.Name(r.File), err)
		}
		data, err := readFile(path)
		if err != nil {
			return "", fmt.Errorf("secret file %s: %w", safetext.Name(r.File), err)
		}
		// Files written by editors and echo end in a newline that is not
		// part of the secret; only one is removed so deliberate trailing
		// whitespace survives.
		v := string(data)
		if t, ok := strings.CutSuffix(v, "\r\n"); ok {
			v = t
		} else {
			v = strings.TrimSuffix(v, "\n")
		}
		if v == "" {
			return "", fmt.Errorf("secret file %s: empty", safetext.Name(r.File))
		}
		if isPrivateKey(v) {
			// Sent to every host as a password, it would hand the key out.
			return "", fmt.Errorf("secret file %s holds a private key, not a password or passphrase: gpukit would send it to the hosts; "+
				"to log in with this key set ssh.keyFile to it, and keep its passphrase (if any) in a file of its own", safetext.Name(r.File))
		}
		return v, nil
	default:
		return r.Value, nil
	}
}

// sources names the fields of r that are set.
func (r *SecretRef) sources() []string {
	var set []string
	if r.Env != "" {
		set = append(set, "env")
	}
	if r.File != "" {
		set = append(set, "file")
	}
	if r.Value != "" {
		set = append(set, "value")
	}
	return set
}

// checkSources is the one "exactly one source" rule, for validation and
// for Resolve.
func (r *SecretRef) checkSources() error {
	switch set := r.sources(); len(set) {
	case 0:
		return errors.New("a secret must set exactly one of env, file or value")
	case 1:
		return nil
	default:
		return fmt.Errorf("a secret must set exactly one of env, file or value, not %s", joinWords(set, "and"))
	}
}

// isPrivateKey recognises the private key formats an operator keeps around:
// PEM (RSA, EC, PKCS#8, encrypted), OpenSSH, PuTTY.
func isPrivateKey(s string) bool {
	return strings.Contains(s, "PRIVATE KEY-----") || strings.Contains(s, "PuTTY-User-Key-File-")
}
