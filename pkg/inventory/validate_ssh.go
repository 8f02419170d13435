package inventory

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// checkSSH checks one ssh block as written: spec.ssh, or a host's override
// (inheritedUser is spec.ssh's user then, "" for spec.ssh itself).
func (c *checker) checkSSH(path string, s *SSH, inheritedUser string, allowInline bool) {
	if s.User != "" {
		if err := checkUser(s.User); err != nil {
			c.errorf(path+".user", "invalid user: %v", err)
		}
	}
	c.checkPort(path+".port", s.Port)
	if s.KeyFile != "" {
		if err := checkPath(s.KeyFile); err != nil {
			c.errorf(path+".keyFile", "invalid key file: %v", err)
		}
	}
	if s.KnownHostsFile != "" {
		if err := checkPath(s.KnownHostsFile); err != nil {
			c.errorf(path+".knownHostsFile", "invalid known hosts file: %v", err)
		}
	}
	if s.ConnectTimeout != "" {
		d, err := time.ParseDuration(s.ConnectTimeout)
		switch {
		case err != nil:
			c.errorf(path+".connectTimeout", "invalid duration %s; expected a Go duration such as 10s, 1m or 1m30s", q(s.ConnectTimeout))
		case d <= 0:
			c.errorf(path+".connectTimeout", "connect timeout %s must be positive", q(s.ConnectTimeout))
		case d > 10*time.Minute:
			c.warnf(path+".connectTimeout", "connect timeout %s is long; an unreachable host will stall its batch that long", q(s.ConnectTimeout))
		}
	}
	c.checkSecret(path+".keyPassphrase", s.KeyPassphrase, allowInline)
	if s.Password != nil {
		c.checkSecret(path+".password", s.Password, allowInline)
		c.warnf(path+".password", "password authentication is in use; SSH keys (keyFile or agent) are safer")
	}
	if s.KeyPassphrase != nil && s.KeyFile == "" && path != "spec.ssh" {
		// spec.ssh may hold the passphrase for keys set per host; a host
		// override that sets one without a key most likely forgot the key.
		c.warnf(path+".keyPassphrase", "keyPassphrase is set but this block sets no keyFile")
	}
	if b := s.Bastion; b != nil {
		bpath := path + ".bastion"
		if b.Address != "" {
			if err := checkAddress(b.Address); err != nil {
				c.errorf(bpath+".address", "invalid bastion address: %v", err)
			}
		}
		c.checkPort(bpath+".port", b.Port)
		if b.User != "" {
			if err := checkUser(b.User); err != nil {
				c.errorf(bpath+".user", "invalid user: %v", err)
			}
		}
		if b.KeyFile != "" {
			if err := checkPath(b.KeyFile); err != nil {
				c.errorf(bpath+".keyFile", "invalid key file: %v", err)
			}
		}
		if b.Password != nil {
			c.checkSecret(bpath+".password", b.Password, allowInline)
			c.warnf(bpath+".password", "password authentication is in use for the bastion; SSH keys are safer")
		}
	}
	if s.Sudo != nil {
		c.checkSecret(path+".sudo.password", s.Sudo.Password, allowInline)
		if e := s.Sudo.Enabled; e != nil && !*e && cmp.Or(s.User, inheritedUser, DefaultSSHUser) != "root" {
			c.warnf(path+".sudo.enabled", "sudo is off: commands that need root run as the login user, which must be root or have uid 0")
		}
	}
	if s.Agent != nil && !*s.Agent && s.KeyFile == "" && s.Password == nil && path != "spec.ssh" {
		c.warnf(path+".agent", "agent is off and this block sets neither keyFile nor password; the inherited settings must provide a way to log in")
	}
}

// checkPort checks a port that was written (0 means unset unless written).
func (c *checker) checkPort(path string, port int) {
	if (port != 0 || c.isSet(path)) && (port < 1 || port > 65535) {
		c.errorf(path, "port %d is out of range 1-65535", port)
	}
}

// checkSecret checks a SecretRef: exactly one source, inline values only
// when the file allows them, and safe names for env and file.
func (c *checker) checkSecret(path string, r *SecretRef, allowInline bool) {
	if r == nil {
		return
	}
	if err := r.checkSources(); err != nil {
		c.errorf(path, "%v", err)
		if len(r.sources()) == 0 {
			return
		}
	}
	if r.Env != "" {
		if err := badChar(r.Env, charsEnv); err != nil || r.Env[0] >= '0' && r.Env[0] <= '9' {
			c.errorf(path+".env", "invalid environment variable name %s; expected letters, digits and _, not starting with a digit", q(r.Env))
		}
	}
	if r.File != "" {
		if err := checkPath(r.File); err != nil {
			c.errorf(path+".file", "invalid secret file: %v", err)
		}
	}
	if r.Value != "" && !allowInline {
		// The value is never echoed: it is a secret.
		c.errorf(path+".value", "inline secrets are refused; use env or file, or set spec.allowInlineSecrets: true")
	}
}

// joinWords lists words: "a, b and c" (conj "and") or "a, b or c".
func joinWords(s []string, conj string) string {
	switch len(s) {
	case 0:
		return ""
	case 1:
		return s[0]
	}
	return fmt.Sprintf("%s %s %s", strings.Join(s[:len(s)-1], ", "), conj, s[len(s)-1])
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
