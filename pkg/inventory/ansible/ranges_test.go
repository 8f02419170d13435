package ansible

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gpukit/gpukit/pkg/inventory"
)

func TestExpandHostPattern(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want []string
	}{
		{"gpu01", []string{"gpu01"}},
		{"node[1:3]", []string{"node1", "node2", "node3"}},
		{"node[08:11]", []string{"node08", "node09", "node10", "node11"}},
		{"10.0.0.[1:3]", []string{"10.0.0.1", "10.0.0.2", "10.0.0.3"}},
		{"db-[a:c]", []string{"db-a", "db-b", "db-c"}},
		{"x[1:9:4]", []string{"x1", "x5", "x9"}},
		{"[:2]y", []string{"0y", "1y", "2y"}},
		{"r[1:2]n[1:2].dc", []string{"r1n1.dc", "r1n2.dc", "r2n1.dc", "r2n2.dc"}},
	}
	for _, tt := range tests {
		got, err := expandHostPattern(tt.in)
		if err != nil || !equalStrings(got, tt.want) {
			t.Errorf("expandHostPattern(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{"a[1:2", "a[1]", "a[1:]", "a[01:5]", "a[5:1]", "a[1:2:0]", "a[x:10]", "a[0:999999999]"} {
		if got, err := expandHostPattern(bad); err == nil {
			t.Errorf("expandHostPattern(%q) = %q, want an error", bad, got)
		}
	}
}

func TestSplitHostPort(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, pattern, port string }{
		{"h", "h", ""},
		{"h:22", "h", "22"},
		{"node[01:10]:2222", "node[01:10]", "2222"},
		{"10.0.0.[1:9]", "10.0.0.[1:9]", ""},
		{"fd00::1", "fd00::1", ""},
		{"[fd00::1]:2222", "fd00::1", "2222"},
		{"[fd00::1]", "fd00::1", ""},
	}
	for _, tt := range tests {
		p, port, err := splitHostPort(tt.in)
		if err != nil || p != tt.pattern || port != tt.port {
			t.Errorf("splitHostPort(%q) = %q, %q, %v", tt.in, p, port, err)
		}
	}
	for _, bad := range []string{"h:", "h:ssh", "[fd00::1]x"} {
		if _, _, err := splitHostPort(bad); err == nil {
			t.Errorf("splitHostPort(%q): no error", bad)
		}
	}
}

func TestCompressHosts(t *testing.T) {
	t.Parallel()
	mk := func(name, addr string, roles ...inventory.Role) *mappedHost {
		return &mappedHost{src: &ansibleHost{name: name}, name: name, address: addr, roles: roles}
	}
	cp, w := inventory.RoleControlPlane, inventory.RoleWorker
	tests := []struct {
		name  string
		hosts []*mappedHost
		want  []string
	}{
		{"padded run", []*mappedHost{mk("gpu08", "10.0.0.8", w), mk("gpu09", "10.0.0.9", w), mk("gpu10", "10.0.0.10", w)},
			[]string{"gpu[08:10] 10.0.0.[8:10] worker"}},
		{"unpadded run across a digit", []*mappedHost{mk("n9", "10.0.0.9", w), mk("n10", "10.0.0.10", w), mk("n11", "10.0.0.11", w)},
			[]string{"n[9:11] 10.0.0.[9:11] worker"}},
		{"two hosts stay apart", []*mappedHost{mk("a1", "10.0.0.1", w), mk("a2", "10.0.0.2", w)},
			[]string{"a1 10.0.0.1 worker", "a2 10.0.0.2 worker"}},
		{"a gap in the addresses splits the run", []*mappedHost{mk("a1", "10.0.0.1", w), mk("a2", "10.0.0.2", w), mk("a3", "10.0.0.3", w), mk("a4", "10.0.0.9", w)},
			[]string{"a[1:3] 10.0.0.[1:3] worker", "a4 10.0.0.9 worker"}},
		{"different roles split the run", []*mappedHost{mk("a1", "10.0.0.1", cp), mk("a2", "10.0.0.2", w), mk("a3", "10.0.0.3", w), mk("a4", "10.0.0.4", w)},
			[]string{"a1 10.0.0.1 control-plane", "a[2:4] 10.0.0.[2:4] worker"}},
		{"padding must stay the same", []*mappedHost{mk("a98", "10.0.0.1", w), mk("a99", "10.0.0.2", w), mk("a100", "10.0.0.3", w)},
			[]string{"a[98:100] 10.0.0.[1:3] worker"}},
		{"a padded start fixes the width", []*mappedHost{mk("a098", "10.0.0.1", w), mk("a099", "10.0.0.2", w), mk("a0100", "10.0.0.3", w)},
			[]string{"a098 10.0.0.1 worker", "a099 10.0.0.2 worker", "a0100 10.0.0.3 worker"}},
		{"DNS addresses", []*mappedHost{mk("g1", "g1.dc", w), mk("g2", "g2.dc", w), mk("g3", "g3.dc", w)},
			[]string{"g[1:3] g[1:3].dc worker"}},
		{"the varying number must stay in one place", []*mappedHost{mk("r1n1", "10.0.0.1", w), mk("r1n2", "10.0.0.2", w), mk("r2n2", "10.0.0.3", w)},
			[]string{"r1n1 10.0.0.1 worker", "r1n2 10.0.0.2 worker", "r2n2 10.0.0.3 worker"}},
		{"IPv6 is left alone", []*mappedHost{mk("a1", "fd00::1", w), mk("a2", "fd00::2", w), mk("a3", "fd00::3", w)},
			[]string{"a1 fd00::1 worker", "a2 fd00::2 worker", "a3 fd00::3 worker"}},
		{"no address, no range", []*mappedHost{mk("a1", "", w), mk("a2", "", w), mk("a3", "", w)},
			[]string{"a1  worker", "a2  worker", "a3  worker"}},
	}
	for _, tt := range tests {
		var got []string
		for _, h := range compressHosts(tt.hosts) {
			got = append(got, hostLine(h))
		}
		if !equalStrings(got, tt.want) {
			t.Errorf("%s:\n got %q\nwant %q", tt.name, got, tt.want)
		}
	}
}

// TestCompressionRoundTrips checks with gpukit's own expansion that a
// compressed inventory describes exactly the hosts that went in.
func TestCompressionRoundTrips(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("[kube_control_plane]\ncp[1:3] ansible_user=ubuntu\n[kube_node]\n")
	var want []string
	for i := 1; i <= 3; i++ {
		want = append(want, fmt.Sprintf("cp%d=cp%d", i, i))
	}
	for i := 95; i <= 105; i++ { // crosses 99 -> 100 with and without padding
		fmt.Fprintf(&b, "gpu%03d ansible_host=10.0.1.%d ansible_user=ubuntu\n", i, i)
		want = append(want, fmt.Sprintf("gpu%03d=10.0.1.%d", i, i))
	}
	res := mustConvert(t, Input{Data: []byte(b.String()), ClusterName: "c"})
	if n := len(res.Cluster.Spec.Hosts); n != 2 {
		t.Errorf("%d host entries, want 2:\n%s", n, Render(res))
	}
	inv := mustLoad(t, Render(res))
	var got []string
	for _, m := range inv.Machines {
		got = append(got, m.Name+"="+m.Address)
	}
	if !equalStrings(got, want) {
		t.Errorf("machines:\n got %q\nwant %q", got, want)
	}
}
