package ansible

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gpukit/gpukit/pkg/inventory"
)

// Environment variables that stand in for passwords found in an inventory.
// A password is never copied into the output; the operator exports it.
const (
	EnvSSHPassword  = "GPUKIT_SSH_PASSWORD"
	EnvSudoPassword = "GPUKIT_SUDO_PASSWORD"
)

// hostKeyAdvice is said wherever an inventory switches host key checking off.
const hostKeyAdvice = "gpukit keeps SSH host key checking on and does not copy this setting; put the hosts' keys in ~/.ssh/known_hosts, or trust each key on first use by running gpukit once with --accept-new-host-keys"

// first returns the first of keys that is defined: Ansible's current name
// first, then the legacy aliases (ansible_ssh_user, ansible_sudo_pass, ...).
func (s varSet) first(keys ...string) (variable, bool) {
	for _, k := range keys {
		if v, ok := s[k]; ok {
			return v, true
		}
	}
	return variable{}, false
}

// truthy reads an Ansible boolean the way YAML 1.1 and Ansible's bool filter
// do ("yes", "True", "on", "1").
func truthy(s string) (value, ok bool) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "true", "yes", "on", "1", "y":
		return true, true
	case "false", "no", "off", "0", "n":
		return false, true
	}
	return false, false
}

// usable reports whether a variable holds a literal value the conversion can
// copy; a Jinja2 template or vault-encrypted value gets a note instead.
func (c *converter) usable(v variable) bool {
	switch {
	case v.vault:
		c.notes.addf(v.pos, v.subject(), "the value is vault-encrypted and is not converted; set the matching gpukit field by hand")
		return false
	case v.isTemplate():
		what := "a Jinja2 template that only Ansible can evaluate"
		if c.inv.source == SourceKubeKey {
			what = "a template that only KubeKey can evaluate"
		}
		c.notes.addf(v.pos, v.subject(), "the value %q is %s; it is not converted, set the matching gpukit field by hand", v.text, what)
		return false
	}
	return v.text != ""
}

// mapConnection reads how Ansible reaches and becomes root on the host.
func (c *converter) mapConnection(m *mappedHost) {
	v := m.vars
	if x, ok := v.first("ansible_user", "ansible_ssh_user"); ok && c.usable(x) {
		m.ssh.User = x.text
	}
	if x, ok := v.first("ansible_port", "ansible_ssh_port"); ok && c.usable(x) {
		if n, err := strconv.Atoi(x.text); err == nil && n >= 1 && n <= 65535 {
			m.ssh.Port = n
		} else {
			c.notes.addf(x.pos, x.subject(), "port %q is not a number between 1 and 65535; not converted", x.text)
		}
	}
	if x, ok := v.first("ansible_ssh_private_key_file", "ansible_private_key_file"); ok && c.usable(x) {
		m.ssh.KeyFile = x.text
	}
	if x, ok := v.first("ansible_timeout", "ansible_ssh_timeout"); ok && c.usable(x) {
		if n, err := strconv.Atoi(x.text); err == nil && n > 0 {
			m.ssh.ConnectTimeout = strconv.Itoa(n) + "s"
		}
	}
	c.mapBecome(m)
	if x, ok := v.first("ansible_password", "ansible_ssh_pass", "ansible_ssh_password"); ok && x.text != "" {
		m.sshPassword = &x
	}
	if x, ok := v.first("ansible_become_password", "ansible_become_pass", "ansible_sudo_password", "ansible_sudo_pass"); ok && x.text != "" {
		m.sudoPassword = &x
	}
	for _, key := range []string{"ansible_ssh_common_args", "ansible_ssh_extra_args", "ansible_ssh_args"} {
		if x, ok := v[key]; ok && c.usable(x) {
			c.mapSSHArgs(m, x)
		}
	}
	if x, ok := v.first("ansible_host_key_checking", "ansible_ssh_host_key_checking"); ok && c.usable(x) {
		if on, valid := truthy(x.text); valid && !on {
			c.notes.addf(x.pos, x.subject(), "%s", hostKeyAdvice)
		}
	}
	if x, ok := v["ansible_connection"]; ok && c.usable(x) {
		switch strings.TrimPrefix(x.text, "ansible.builtin.") {
		case "ssh", "smart", "paramiko", "paramiko_ssh":
		case "local":
			c.notes.addf(x.pos, x.subject(), "%s=local is not converted: gpukit reaches every host over SSH, this one too, so sshd must accept %s", x.label(), firstNonEmpty(m.address, m.src.name))
		default:
			c.notes.addf(x.pos, x.subject(), "gpukit reaches hosts over SSH only; connection %q is not supported", x.text)
		}
	}
}

// mapBecome reads privilege escalation. gpukit always escalates to root with
// sudo, so other methods and users are reported, not converted.
func (c *converter) mapBecome(m *mappedHost) {
	v := m.vars
	if x, ok := v.first("ansible_become", "ansible_sudo"); ok && c.usable(x) {
		on, valid := truthy(x.text)
		switch {
		case !valid:
			c.notes.addf(x.pos, x.subject(), "%q is not a boolean; not converted", x.text)
		case on:
			m.become = true
		default:
			c.notes.addf(x.pos, x.subject(), "ansible_become is false, which is not converted: gpukit needs root on every host and uses sudo whenever the SSH user is not root")
		}
	}
	if x, ok := v["ansible_become_method"]; ok && c.usable(x) && strings.TrimPrefix(x.text, "ansible.builtin.") != "sudo" {
		c.notes.addf(x.pos, x.subject(), "gpukit escalates with sudo only; become method %q is not supported", x.text)
	}
	if x, ok := v["ansible_become_user"]; ok && c.usable(x) && x.text != "root" {
		c.notes.addf(x.pos, x.subject(), "gpukit always becomes root; become user %q is not converted", x.text)
	}
}

// mapSSHArgs reads ansible_ssh_common_args and friends. Ansible passes its
// own variables (ansible_user, ansible_port, ...) to ssh before these
// arguments and OpenSSH keeps the first value, so the arguments only fill
// what the variables left empty.
func (c *converter) mapSSHArgs(m *mappedHost, x variable) {
	o := parseSSHArgs(x.text)
	subject := x.subject()
	s := &m.ssh
	s.User = firstNonEmpty(s.User, o.user)
	s.KeyFile = firstNonEmpty(s.KeyFile, o.keyFile)
	s.KnownHostsFile = firstNonEmpty(s.KnownHostsFile, o.knownHostsFile)
	s.ConnectTimeout = firstNonEmpty(s.ConnectTimeout, o.connectTimeout)
	if s.Port == 0 {
		s.Port = o.port
	}
	if o.bastion != nil && s.Bastion == nil {
		s.Bastion = o.bastion
	}
	if o.noHostKeyCheck {
		c.notes.addf(x.pos, subject, "StrictHostKeyChecking=no / UserKnownHostsFile=/dev/null: %s", hostKeyAdvice)
	}
	if o.acceptNew {
		c.notes.addf(x.pos, subject, "StrictHostKeyChecking=accept-new is a run option in gpukit, not an inventory setting: pass --accept-new-host-keys")
	}
	if len(o.ignored) > 0 {
		c.notes.addf(x.pos, subject, "OpenSSH options %s have no gpukit equivalent and are dropped", strings.Join(o.ignored, ", "))
	}
	for _, p := range o.problems {
		c.notes.addf(x.pos, subject, "not converted: %s", p)
	}
}

// nameSecrets replaces every password with an environment variable reference.
// Hosts that share a password share a variable; a second distinct password
// gets GPUKIT_..._2 and so on, and a note says which hosts use which.
func (c *converter) nameSecrets(hosts []*mappedHost) {
	c.nameSecret(hosts, EnvSSHPassword, "SSH password",
		func(m *mappedHost) *variable { return m.sshPassword },
		func(m *mappedHost, ref *inventory.SecretRef) { m.ssh.Password = ref })
	setSudo := func(m *mappedHost, ref *inventory.SecretRef) {
		if m.ssh.Sudo == nil {
			m.ssh.Sudo = &inventory.Sudo{}
		}
		m.ssh.Sudo.Password = ref
	}
	// One definition that is both passwords (KubeKey's connector.password)
	// is one environment variable, not two to keep equal.
	var own []*mappedHost
	for _, m := range hosts {
		if p, s := m.sshPassword, m.sudoPassword; p != nil && s != nil && p.pos == s.pos && p.label() == s.label() {
			ref := *m.ssh.Password
			setSudo(m, &ref)
			c.notes.addf(s.pos, s.subject(), "is the sudo password too: ssh.sudo.password reads the same environment variable, %s", ref.Env)
			continue
		}
		own = append(own, m)
	}
	c.nameSecret(own, EnvSudoPassword, "sudo password",
		func(m *mappedHost) *variable { return m.sudoPassword }, setSudo)
}

func (c *converter) nameSecret(hosts []*mappedHost, base, what string, get func(*mappedHost) *variable, set func(*mappedHost, *inventory.SecretRef)) {
	type group struct {
		env   string
		first variable
		hosts []string
	}
	var groups []*group
	byValue := map[string]*group{}
	for _, m := range hosts {
		secret := get(m)
		if secret == nil {
			continue
		}
		g := byValue[secret.text]
		if g == nil {
			env := base
			if len(groups) > 0 {
				env = fmt.Sprintf("%s_%d", base, len(groups)+1)
			}
			g = &group{env: env, first: *secret}
			byValue[secret.text] = g
			groups = append(groups, g)
		}
		g.hosts = append(g.hosts, m.src.name)
		set(m, &inventory.SecretRef{Env: g.env})
	}
	for _, g := range groups {
		msg := fmt.Sprintf("the %s is never copied into a gpukit inventory; it is read from the environment variable %s, so export it before running gpukit", what, g.env)
		if len(groups) > 1 {
			msg += fmt.Sprintf(" (used by %s)", listNames(g.hosts, 5))
		}
		if g.first.vault || g.first.isTemplate() {
			msg += "; the inventory holds a template or vault value, so export the password it stands for"
		}
		c.notes.addf(g.first.pos, g.first.subject(), "%s", msg)
	}
}
