package kubeadm

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/test/golden"
)

func parse(t *testing.T, doc string) *inventory.Inventory {
	t.Helper()
	inv, err := inventory.Parse("test.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return inv
}

// The inventory's settings reach kubeadm's configuration: the lab's (every
// spec.kubernetes field a host in a container needs, the registry mirror as
// image repository) and a plain one (defaults only, endpoint on the first
// control plane).
func TestConfigFromInventory(t *testing.T) {
	for _, c := range []struct{ name, doc string }{
		{"defaults", `apiVersion: gpukit.dev/v1alpha1
kind: Cluster
metadata: {name: plain}
spec:
  hosts:
    - {name: cp-1, address: 10.0.0.10, roles: [control-plane]}
    - {name: "gpu-[1:2]", address: "10.0.0.[11:12]", roles: [worker], taints: ["nvidia.com/gpu=present:NoSchedule"]}
`},
		{"lab", `apiVersion: gpukit.dev/v1alpha1
kind: Cluster
metadata: {name: lab}
spec:
  hosts:
    - {name: lab-1, address: 10.251.4.1, roles: [control-plane]}
    - {name: lab-2, address: 10.251.4.2, roles: [worker]}
  mirrors: {registry: "10.251.0.1:5000/k8s"}
  kubernetes:
    ignorePreflightErrors: [SystemVerification]
    kubelet: {cgroupDriver: cgroupfs, failCgroupV1: false, failSwapOn: false, resolvConf: /etc/gpukit-lab/resolv.conf}
    kubeProxy: {mode: iptables, conntrackMaxPerCore: 0}
    containerd: {restrictOOMScoreAdj: true}
`},
	} {
		t.Run(c.name, func(t *testing.T) {
			inv := parse(t, c.doc)
			cl := ClusterOf(inv)
			for i, m := range inv.Machines {
				n := NodeOf(inv, m)
				var b []byte
				var err error
				if i == 0 {
					b, err = InitConfig(cl, n)
				} else {
					b, err = JoinConfig(cl, n, testJoin)
				}
				if err != nil {
					t.Fatal(err)
				}
				golden.Assert(t, filepath.Join("testdata", "inventory", c.name, m.Name+".yaml"), b)
			}
		})
	}
}

// testJoin stands in for a join's secrets (a bootstrap token's and a CA
// hash's form, so that kubeadm validates the golden files).
var testJoin = Join{Token: "abcdef.0123456789abcdef", CACertHashes: []string{"sha256:" + strings.Repeat("0a", 32)}}

func TestEndpoint(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", ""},
		{"lb.example.com", "lb.example.com:6443"},
		{"lb.example.com:8443", "lb.example.com:8443"},
		{"10.0.0.10", "10.0.0.10:6443"},
		{"fd00::10", "[fd00::10]:6443"},
		{"[fd00::10]:443", "[fd00::10]:443"},
	} {
		if got := endpoint(c.in); got != c.want {
			t.Errorf("endpoint(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// A cluster without workers keeps no control-plane taint: its only nodes
// must run the workloads.
func TestSingleNodeHasNoControlPlaneTaint(t *testing.T) {
	inv := parse(t, `apiVersion: gpukit.dev/v1alpha1
kind: Cluster
metadata: {name: one}
spec:
  hosts:
    - {name: box, address: 10.0.0.10, roles: [control-plane]}
`)
	if n := NodeOf(inv, inv.Machines[0]); len(n.Taints) != 0 || n.Taints == nil {
		t.Errorf("taints %#v, want an empty list", n.Taints)
	}
}
