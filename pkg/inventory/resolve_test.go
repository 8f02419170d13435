package inventory

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"
)

// Hosts written by DNS name get the IP the cluster advertises them by,
// resolved once per run; a name that does not resolve is named with its
// position; hosts behind a bastion are left to resolve there.
func TestResolveNames(t *testing.T) {
	t.Parallel()
	doc := `apiVersion: gpukit.dev/v1alpha1
kind: Cluster
metadata: {name: t}
spec:
  hosts:
  - {name: cp-1, address: 10.0.0.1, roles: [control-plane]}
  - {name: gpu-1, address: gpu-1.dc.example, roles: [worker]}
  - {name: gpu-3, address: gpu-3.dc.example, roles: [worker]}
  - {name: gpu-4, address: gone.dc.example, roles: [worker]}
  - {name: gpu-5, address: far.dc.example, roles: [worker], ssh: {bastion: {address: 10.0.0.9}}}
`
	inv, err := Parse("c.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	asked := map[string]int{}
	lookup := func(_ context.Context, host string) ([]netip.Addr, error) {
		asked[host]++
		switch host {
		case "gpu-1.dc.example":
			return []netip.Addr{netip.MustParseAddr("fd00::11"), netip.MustParseAddr("10.0.1.11")}, nil
		case "gpu-3.dc.example":
			return []netip.Addr{netip.MustParseAddr("fd00::13")}, nil
		}
		return nil, errors.New("no such host")
	}
	err = ResolveNames(context.Background(), inv, lookup)
	if err == nil || !strings.Contains(err.Error(), `c.yaml:9:5: host gpu-4: address "gone.dc.example" does not resolve on this machine (no such host)`) || strings.Count(err.Error(), "does not resolve") != 1 {
		t.Fatalf("error %v, want gpu-4 named once", err)
	}
	want := map[string]string{"cp-1": "10.0.0.1", "gpu-1": "10.0.1.11", "gpu-3": "fd00::13", "gpu-5": "far.dc.example"}
	for _, m := range inv.Machines {
		if w, ok := want[m.Name]; ok && m.NodeIP() != w {
			t.Errorf("%s: node IP %q, want %q", m.Name, m.NodeIP(), w)
		}
	}
	if asked["gpu-1.dc.example"] != 1 || asked["far.dc.example"] != 0 {
		t.Errorf("lookups %v: want one lookup per name, none behind the bastion", asked)
	}
}
