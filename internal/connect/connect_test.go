package connect

import (
	"errors"
	"strings"
	"testing"

	"github.com/gpukit/gpukit/pkg/inventory"
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
	c, ok := set.Config("gpu-2")
	if !ok || c.Address != "192.0.2.2" || c.User != "ops" || c.KeyFile != "/home/op/.ssh/id_ed25519" ||
		c.Password != "canary-pw" || c.SudoPassword != "canary-pw" || !c.AcceptNewHostKeys {
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
