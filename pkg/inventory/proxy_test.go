package inventory

import (
	"fmt"
	"net/netip"
	"reflect"
	"strings"
	"testing"
)

// The hosts' proxy: spec.proxy for every host, a host entry's own (or {}
// for none) instead, https defaulting to http; the cluster's own networks
// past it.
func TestProxyPerHostAndNoProxy(t *testing.T) {
	doc := strings.Replace(minimal(`    - name: gpu-[1:2]
      address: 10.0.0.[11:12]
      roles: [worker]
    - name: direct-1
      address: 10.0.0.20
      roles: [worker]
      proxy: {}
    - name: other-1
      address: 10.0.0.30
      roles: [worker]
      proxy: {https: "http://proxy2.example.com:8080", noProxy: [.lab]}
`), "spec:\n", "spec:\n  kubernetes: {controlPlaneEndpoint: \"api.example.com:6443\"}\n  proxy:\n    http: http://proxy.example.com:3128\n    noProxy: [.corp.example.com, registry.example.com]\n", 1)
	inv := mustParse(t, doc)
	by := map[string]Machine{}
	for _, m := range inv.Machines {
		by[m.Name] = m
	}
	for _, tt := range []struct {
		host, http, https string
		on                bool
	}{
		{"cp-1", "http://proxy.example.com:3128", "http://proxy.example.com:3128", true},
		{"gpu-2", "http://proxy.example.com:3128", "http://proxy.example.com:3128", true},
		{"direct-1", "", "", false},
		{"other-1", "", "http://proxy2.example.com:8080", true},
	} {
		p := by[tt.host].Proxy
		if p.HTTP != tt.http || p.HTTPS != tt.https || p.Enabled() != tt.on {
			t.Errorf("%s: proxy %+v, want http %q https %q enabled %v", tt.host, p, tt.http, tt.https, tt.on)
		}
	}
	want := []string{".corp.example.com", "registry.example.com", "localhost", "127.0.0.1", "::1",
		"cp-1", "gpu-1", "gpu-2", "direct-1", "other-1", "10.0.0.10/31", "10.0.0.12", "10.0.0.20", "10.0.0.30",
		"api.example.com", DefaultPodCIDR, DefaultServiceCIDR, ".svc", ".cluster.local"}
	if got := inv.NoProxy(by["gpu-1"]); !reflect.DeepEqual(got, want) {
		t.Errorf("noProxy of gpu-1:\n got %v\nwant %v", got, want)
	}
	if got := inv.NoProxy(by["other-1"]); got[0] != ".lab" || got[1] != "localhost" {
		t.Errorf("noProxy of other-1 starts %v, want its own list first", got[:2])
	}
	if got := inv.NoProxy(by["direct-1"]); got != nil {
		t.Errorf("noProxy of a host without a proxy: %v", got)
	}
}

func TestNoProxyEntries(t *testing.T) {
	for _, tt := range []struct {
		entry string
		ok    bool
	}{
		{"registry.example.com", true}, {".example.com", true}, {"10.0.0.0/8", true}, {"fd00::/64", true},
		{"10.1.2.3", true}, {"::1", true}, {"localhost", true}, {"mirror.lab:8443", true},
		{"", false}, {"*", false}, {"a b", false}, {"http://x", false}, {"host:0", false}, {"$(reboot)", false},
	} {
		if err := checkNoProxy(tt.entry); (err == nil) != tt.ok {
			t.Errorf("%q: %v, want ok %v", tt.entry, err, tt.ok)
		}
	}
}

func TestWithoutUserinfo(t *testing.T) {
	for in, want := range map[string]string{
		"http://user:pw@proxy:3128":   "http://***@proxy:3128",
		"https://a@b@mirror.lab/p@th": "https://***@mirror.lab/p@th",
		"http://proxy:3128":           "http://proxy:3128",
		"user:secret@host":            "***@host",
	} {
		if got := withoutUserinfo(in); got != want {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
	}
}

// 5000 hosts and their node addresses fit in NO_PROXY (Linux bounds one
// environment variable at 128 KiB): runs of addresses become prefixes that
// hold exactly them.
func TestNoProxyAtScale(t *testing.T) {
	var hosts strings.Builder
	for i := range 20 {
		fmt.Fprintf(&hosts, "    - {name: \"g%d-[001:250]\", address: \"10.1.%d.[1:250]\", nodeAddress: \"10.2.%d.[1:250]\", roles: [worker]}\n", i, i, i)
	}
	doc := strings.Replace(minimal(hosts.String()), "spec:\n",
		"spec:\n  proxy: {http: \"http://proxy.example.com:3128\"}\n  network: {podCIDR: 10.128.0.0/9}\n", 1)
	inv := mustParse(t, doc)
	if len(inv.Machines) != 5001 {
		t.Fatalf("%d machines", len(inv.Machines))
	}
	list := strings.Join(inv.NoProxy(inv.Machines[0]), ",")
	if n := len(list); n > 96<<10 {
		t.Errorf("NO_PROXY of 5001 hosts is %d bytes", n)
	}
	t.Logf("NO_PROXY of 5001 hosts: %d bytes", len(list))
}

func TestCoverExactly(t *testing.T) {
	var addrs []netip.Addr
	for _, s := range []string{"10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4", "10.0.0.5", "10.0.0.6", "10.0.0.7", "10.0.0.8", "10.0.0.10", "10.0.0.10", "fd00::1", "fd00::2", "fd00::3"} {
		addrs = append(addrs, netip.MustParseAddr(s))
	}
	var got []string
	for _, p := range coverExactly(addrs) {
		got = append(got, p.String())
	}
	want := "10.0.0.1/32 10.0.0.2/31 10.0.0.4/30 10.0.0.8/32 10.0.0.10/32 fd00::1/128 fd00::2/127"
	if strings.Join(got, " ") != want {
		t.Errorf("got %v, want %s", got, want)
	}
}
