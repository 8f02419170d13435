package connect

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/ssh"
)

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
		ReadFile: func(string) ([]byte, error) { return nil, errors.New("no files") },
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
			tc.block+"\n    keyFile: /k\n  hosts:\n  - {name: cp-1, address: 192.0.2.1, roles: [control-plane]}\n"))
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
	} {
		path := filepath.Join(dir, name)
		if name != "no-such" {
			path = write(name, tc.content)
		}
		inv, err := inventory.Parse("c.yaml", []byte("apiVersion: gpukit.dev/v1alpha1\nkind: Cluster\nmetadata: {name: lab}\nspec:\n  ssh:\n    keyFile: /k\n    knownHostsFile: "+
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
