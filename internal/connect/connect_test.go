package connect

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/ssh"
	"github.com/gpukit/gpukit/test/sshkey"
)

// privateKey is an ed25519 private key in OpenSSH's format, encrypted
// with passphrase when one is given.
func privateKey(t *testing.T, passphrase string) []byte {
	t.Helper()
	key, _ := sshkey.New(t, passphrase)
	return key
}

// writeKeyFile writes a private key and returns its path.
func writeKeyFile(t *testing.T, passphrase string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "id_ed25519")
	if err := os.WriteFile(p, privateKey(t, passphrase), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestConfigs(t *testing.T) {
	inv, err := inventory.Parse("cluster.yaml", []byte(`apiVersion: gpukit.dev/v1alpha1
kind: Cluster
metadata: {name: lab}
spec:
  ssh:
    user: ops
    keyFile: ~/.ssh/id_ed25519
    password: {env: OPS_PASSWORD}
    sudo:
      password: {env: OPS_PASSWORD}
    bastion: {address: 192.0.2.10}
  hosts:
  - name: gpu-[1:3]
    address: 192.0.2.[1:3]
    roles: [control-plane]
`))
	if err != nil {
		t.Fatal(err)
	}
	lookups := 0
	key := privateKey(t, "")
	src := Secrets{
		LookupEnv: func(k string) (string, bool) {
			switch k {
			case "HOME":
				return "/home/op", true
			case "OPS_PASSWORD":
				lookups++
				return "canary-pw", true
			}
			return "", false
		},
		ReadFile: func(p string) ([]byte, error) {
			if p == "/home/op/.ssh/id_ed25519" {
				return key, nil
			}
			return nil, errors.New("no files")
		},
	}
	set, err := Configs(inv, Options{AcceptNewHostKeys: true}, src)
	if err != nil {
		t.Fatal(err)
	}
	if lookups != 1 || len(set.Secrets) != 1 || set.Secrets[0] != "canary-pw" {
		t.Errorf("secret read %d times, secrets %q: want once", lookups, set.Secrets)
	}
	c, ok := set.byHost["gpu-2"]
	if !ok || c.Address != "192.0.2.2" || c.User != "ops" || c.KeyFile != "/home/op/.ssh/id_ed25519" ||
		c.Password != "canary-pw" || c.SudoPassword != "canary-pw" || !c.AcceptNewHostKeys ||
		c.Sudo != ssh.SudoAlways || c.ConnectTimeout != 10*time.Second || c.KnownHostsFile != "/home/op/.ssh/known_hosts" {
		t.Errorf("gpu-2: %+v", c)
	}
	if b := c.Bastion; b == nil || b.Address != "192.0.2.10" || b.User != "ops" || b.KeyFile != c.KeyFile ||
		b.KnownHostsFile != c.KnownHostsFile || !b.AcceptNewHostKeys {
		t.Errorf("bastion: %+v", b)
	}

	src.LookupEnv = func(k string) (string, bool) { return "", false }
	_, err = Configs(inv, Options{}, src)
	if err == nil || !strings.Contains(err.Error(), "cluster.yaml:13") || !strings.Contains(err.Error(), "OPS_PASSWORD") ||
		!strings.Contains(err.Error(), "gpu-1") {
		t.Errorf("missing secret: %v", err)
	}
}

// spec.ssh.sudo.enabled reaches the transport: off means commands run as
// the login user, never through sudo.
func TestSudoEnabledIsHonoured(t *testing.T) {
	key := writeKeyFile(t, "")
	for _, tc := range []struct {
		block string
		want  ssh.SudoMode
	}{
		{"user: ops", ssh.SudoAlways},
		{"user: ops\n    sudo: {enabled: false}", ssh.SudoNever},
		{"user: root", ssh.SudoNever},
		{"user: root\n    sudo: {enabled: true}", ssh.SudoAlways},
	} {
		inv, err := inventory.Parse("c.yaml", []byte("apiVersion: gpukit.dev/v1alpha1\nkind: Cluster\nmetadata: {name: lab}\nspec:\n  ssh:\n    "+
			tc.block+"\n    keyFile: "+key+"\n  hosts:\n  - {name: cp-1, address: 192.0.2.1, roles: [control-plane]}\n"))
		if err != nil {
			t.Fatalf("%s: %v", tc.block, err)
		}
		set, err := Configs(inv, Options{}, OSSecrets())
		if err != nil {
			t.Fatal(err)
		}
		if got := set.byHost["cp-1"].Sudo; got != tc.want {
			t.Errorf("%q: sudo mode %v, want %v", tc.block, got, tc.want)
		}
	}
}

// knownHostsFile pointing at a file that is not known_hosts (a shell rc
// file) is bad input, found before any host is contacted; a missing file, a
// real one, and one with key types the library cannot parse are fine.
func TestKnownHostsFileMustBeKnownHosts(t *testing.T) {
	dir := t.TempDir()
	key := writeKeyFile(t, "")
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := "# comment\n10.0.0.1 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl\n" +
		"|1|F1E1KeoE/eEWhi10WpGv4OdiO6Y=|3988QV0VE8wmZL7suNrYQLITLCg= ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBC6mwiWFcbMAUeGOix6M6DEaNpc+lglGJRkc3GeXm6vgXYBUT8rSieeZMOfCfmD3K5g5DaxnFSjZiGRtFXqKqyk=\n" +
		"@cert-authority *.lab ssh-xmss@openssh.com AAAAFHNzaC14bXNzQG9wZW5zc2guY29tAAAA\n"
	for name, tc := range map[string]struct {
		content string
		err     string
	}{
		"bashrc":  {"# ~/.bashrc\nexport PATH=$PATH:/opt/bin\nalias ll='ls -l'\n", "line 2 is not a known_hosts entry"},
		"good":    {good, ""},
		"empty":   {"", ""},
		"key":     {"-----BEGIN OPENSSH PRIVATE KEY-----\nb3Bl\n", "line 1 is not a known_hosts entry"},
		"no-such": {"", ""},
		"a-dir":   {"", "is not a regular file"},
	} {
		path := filepath.Join(dir, name)
		switch name {
		case "no-such":
		case "a-dir":
			if err := os.Mkdir(path, 0o700); err != nil {
				t.Fatal(err)
			}
		default:
			path = write(name, tc.content)
		}
		inv, err := inventory.Parse("c.yaml", []byte("apiVersion: gpukit.dev/v1alpha1\nkind: Cluster\nmetadata: {name: lab}\nspec:\n  ssh:\n    keyFile: "+key+"\n    knownHostsFile: "+
			path+"\n  hosts:\n  - {name: cp-1, address: 192.0.2.1, roles: [control-plane]}\n"))
		if err != nil {
			t.Fatal(err)
		}
		_, err = Configs(inv, Options{AcceptNewHostKeys: true}, OSSecrets())
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", name, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "c.yaml:")):
			t.Errorf("%s: got %v, want %q", name, err, tc.err)
		}
	}
}

// What the logins need on this machine - the key files, their passphrases,
// the ssh-agent - is checked before any host is dialled, and a problem is
// one bad-input error however many hosts share it. An agent that is not
// there is skipped, with a note, where a key file or password logs in, as
// OpenSSH does.
func TestLocalLoginProblems(t *testing.T) {
	dir := t.TempDir()
	key, encrypted := writeKeyFile(t, ""), writeKeyFile(t, "canary-passphrase")
	notKey := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(notKey, []byte("not a key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "agent.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	knownHosts := filepath.Join(dir, "known_hosts")
	for _, tc := range []struct {
		name   string
		ssh    string            // spec.ssh's fields
		env    map[string]string // the environment
		prompt bool              // on a terminal
		err    string            // the one error; "" none
		agent  bool              // the hosts log in with the agent
		note   string            // the one note
	}{
		{name: "a key file", ssh: "keyFile: " + key},
		{name: "a missing key file", ssh: "keyFile: " + filepath.Join(dir, "id_nope"), err: "c.yaml:6:5: host gpu-1: ssh.keyFile: open " + filepath.Join(dir, "id_nope") + ": no such file or directory"},
		{name: "not a key", ssh: "keyFile: " + notKey, err: "host gpu-1: ssh.keyFile: " + notKey + " is not a private key OpenSSH can use"},
		{name: "encrypted, no passphrase", ssh: "keyFile: " + encrypted, err: encrypted + " is encrypted: set ssh.keyPassphrase"},
		{name: "encrypted, a wrong passphrase", ssh: "keyFile: " + encrypted + "\n    keyPassphrase: {env: KEY_PW}", env: map[string]string{"KEY_PW": "wrong"}, err: "the passphrase does not decrypt it"},
		{name: "encrypted, its passphrase", ssh: "keyFile: " + encrypted + "\n    keyPassphrase: {env: KEY_PW}", env: map[string]string{"KEY_PW": "canary-passphrase"}},
		{name: "encrypted, asked on a terminal", ssh: "keyFile: " + encrypted, prompt: true},
		{name: "the agent", ssh: "agent: true", env: map[string]string{"SSH_AUTH_SOCK": sock}, agent: true},
		{name: "no agent", ssh: "agent: true", err: "c.yaml:6:5: host gpu-1 (and 2 more): ssh.agent: no ssh-agent to use (SSH_AUTH_SOCK is not set), and no ssh.keyFile or ssh.password"},
		{name: "an agent socket nobody answers", ssh: "agent: true", env: map[string]string{"SSH_AUTH_SOCK": filepath.Join(dir, "gone.sock")}, err: "no ssh-agent answers at SSH_AUTH_SOCK"},
		{name: "no agent, a key file", ssh: "agent: true\n    keyFile: " + key, note: "ssh.agent: no ssh-agent to use (SSH_AUTH_SOCK is not set): host gpu-1 (and 2 more) logs in with its key file or password only"},
		{name: "no agent, a missing key file", ssh: "agent: true\n    keyFile: /nonexistent/id", err: "ssh.keyFile: open /nonexistent/id"},
		{name: "the agent and a key file", ssh: "agent: true\n    keyFile: " + key, env: map[string]string{"SSH_AUTH_SOCK": sock}, agent: true},
		{name: "no way to log in", ssh: "user: root", err: "c.yaml:6:5: host gpu-1 (and 2 more): no way to log in: set ssh.keyFile, ssh.password or ssh.agent: true"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inv, err := inventory.Parse("c.yaml", []byte("apiVersion: gpukit.dev/v1alpha1\nkind: Cluster\nmetadata: {name: lab}\nspec:\n  hosts:\n"+
				"  - {name: \"gpu-[1:3]\", address: \"192.0.2.[1:3]\", roles: [control-plane]}\n  ssh:\n    knownHostsFile: "+knownHosts+"\n    "+tc.ssh+"\n"))
			if err != nil {
				t.Fatal(err)
			}
			prompts := 0
			src := Secrets{
				LookupEnv: func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok },
				ReadFile:  os.ReadFile,
			}
			if tc.prompt {
				src.Prompt = func(string) (string, error) { prompts++; return "canary-passphrase", nil }
			}
			set, err := Configs(inv, Options{}, src)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || strings.Count(err.Error(), "\n") > 0 {
					t.Fatalf("got %v, want one error with %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.prompt && (prompts != 1 || len(set.Secrets) != 1) {
				t.Errorf("asked %d times, secrets %q: want once, and the passphrase redacted", prompts, set.Secrets)
			}
			for _, c := range set.byHost {
				if c.UseAgent != tc.agent || tc.agent && c.AgentSocket != sock {
					t.Errorf("%s: agent %v at %q, want %v", c.Name, c.UseAgent, c.AgentSocket, tc.agent)
				}
				if (tc.prompt || strings.Contains(tc.name, "its passphrase")) && c.KeyPassphrase != "canary-passphrase" {
					t.Errorf("%s: passphrase %q", c.Name, c.KeyPassphrase)
				}
			}
			switch {
			case tc.note == "" && len(set.Notes) > 0:
				t.Errorf("notes %q", set.Notes)
			case tc.note != "" && (len(set.Notes) != 1 || set.Notes[0] != tc.note):
				t.Errorf("notes %q, want %q", set.Notes, tc.note)
			}
		})
	}
}
