package inventory

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strings"
)

// checkProxy checks spec.proxy or a host's proxy. The URLs land in files on
// every host and in the environment of its services: no credentials (they
// would be readable in /proc/PID/environ and in systemd's unit dumps), only
// a scheme, a host and a port.
func (c *checker) checkProxy(path string, p *Proxy) {
	for _, f := range []struct{ name, v string }{{"http", p.HTTP}, {"https", p.HTTPS}} {
		if f.v == "" {
			continue
		}
		if err := checkProxyURL(f.v); err != nil {
			c.errorf(path+"."+f.name, "invalid proxy: %v", err)
		}
	}
	if len(p.NoProxy) > 0 && !p.Enabled() {
		c.warnf(path+".noProxy", "noProxy without http or https proxy has no effect")
	}
	for i, e := range p.NoProxy {
		if err := checkNoProxy(e); err != nil {
			c.errorf(fmt.Sprintf("%s.noProxy[%d]", path, i), "invalid noProxy entry: %v", err)
		}
	}
}

// checkProxyURL accepts http(s)://host:port with nothing else.
func checkProxyURL(s string) error {
	if strings.ContainsRune(s, '@') {
		return fmt.Errorf("%s contains credentials (user@): gpukit writes the proxy into files and service environments on every host; let the proxy admit the hosts by address", q(withoutUserinfo(s)))
	}
	if err := badChar(s, charsURL); err != nil {
		return err
	}
	if strings.ContainsRune(s, '%') {
		// systemd reads % in Environment= as a specifier
		return fmt.Errorf("%s: a proxy URL is scheme://host:port, without %%-escapes", q(s))
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "" {
		return fmt.Errorf("%s is not a proxy URL such as http://proxy.example.com:3128", q(s))
	}
	if u.Path != "" && u.Path != "/" || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("%s: a proxy URL is scheme://host:port, without a path or query", q(s))
	}
	if host := u.Hostname(); checkAddress(host) != nil {
		return fmt.Errorf("%s: host %s is neither an IP address nor a DNS name", q(s), q(host))
	}
	if port := u.Port(); port != "" && !validPortText(port) {
		return fmt.Errorf("%s: port %s is out of range 1-65535", q(s), q(port))
	}
	return nil
}

// withoutUserinfo is URL s with whatever precedes its host's "@" hidden: an
// error message must not repeat a password.
func withoutUserinfo(s string) string {
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok {
		scheme, rest = "", s
	} else {
		scheme += "://"
	}
	authority, path, slash := strings.Cut(rest, "/")
	if i := strings.LastIndexByte(authority, '@'); i >= 0 {
		authority = "***" + authority[i:]
	}
	if slash {
		authority += "/" + path
	}
	return scheme + authority
}

// checkNoProxy accepts what curl, Go and apt agree on: a host name, a
// .domain suffix, an IP address or a CIDR, with an optional :port on names.
func checkNoProxy(e string) error {
	switch {
	case e == "":
		return fmt.Errorf("empty entry")
	case e == "*":
		return fmt.Errorf(`"*" sends nothing through the proxy; leave the proxy out instead`)
	}
	if _, err := netip.ParsePrefix(e); err == nil {
		return nil
	}
	if _, err := netip.ParseAddr(e); err == nil {
		return nil
	}
	host := strings.TrimPrefix(e, ".")
	if h, port, err := net.SplitHostPort(host); err == nil {
		if !validPortText(port) {
			return fmt.Errorf("%s: port %s is out of range 1-65535", q(e), q(port))
		}
		host = h
	}
	if !isDNSName(strings.ToLower(host)) {
		return fmt.Errorf("%s: expected a host name, .domain, IP address or CIDR", q(e))
	}
	return nil
}

// NoProxy is what m reaches directly, past its proxy: the written list,
// then the cluster's own destinations (ClusterNoProxy). Each entry once, in
// that order (nil without a proxy).
func (inv *Inventory) NoProxy(m Machine) []string { return NoProxyFor(m, inv.ClusterNoProxy()) }

// NoProxyFor is NoProxy with the cluster's part computed once for every
// host (it reads every host: once per host would grow as hosts squared).
func NoProxyFor(m Machine, cluster []string) []string {
	if !m.Proxy.Enabled() {
		return nil
	}
	return appendNew(nil, map[string]bool{}, append(append([]string{}, m.Proxy.NoProxy...), cluster...)...)
}

// ClusterNoProxy is what every host reaches directly: localhost, the
// cluster's own hosts (names, then addresses), the control-plane endpoint,
// the pod and service networks and the service domains: the kubelet must
// reach the API, and containerd and dockerd their own nodes, directly.
func (inv *Inventory) ClusterNoProxy() []string {
	seen := map[string]bool{}
	out := appendNew(nil, seen, "localhost", "127.0.0.1", "::1")
	var addrs []netip.Addr
	for _, o := range inv.Machines {
		out = appendNew(out, seen, o.Name)
		for _, a := range []string{o.Address, o.NodeIP()} {
			if ip, err := netip.ParseAddr(a); err == nil {
				addrs = append(addrs, ip.Unmap())
			} else {
				out = appendNew(out, seen, a) // a DNS name
			}
		}
	}
	// The hosts' addresses as the fewest prefixes that hold exactly them:
	// NO_PROXY is one environment variable, which Linux bounds at 128 KiB,
	// and 5000 addresses written out would pass it.
	for _, p := range coverExactly(addrs) {
		if p.IsSingleIP() {
			out = appendNew(out, seen, p.Addr().String())
		} else {
			out = appendNew(out, seen, p.String())
		}
	}
	spec := &inv.Cluster.Spec
	if spec.Orchestrator == Kubernetes {
		if ep := spec.Kubernetes.ControlPlaneEndpoint; ep != "" {
			host := ep
			if h, _, err := net.SplitHostPort(ep); err == nil {
				host = h
			}
			out = appendNew(out, seen, host)
		}
		for _, cidrs := range []string{spec.Network.PodCIDR, spec.Network.ServiceCIDR} {
			for _, c := range strings.Split(cidrs, ",") {
				out = appendNew(out, seen, strings.TrimSpace(c))
			}
		}
		out = appendNew(out, seen, ".svc", ".cluster.local")
	}
	return out
}

// appendNew appends the non-empty entries not yet seen.
func appendNew(out []string, seen map[string]bool, es ...string) []string {
	for _, e := range es {
		if e != "" && !seen[e] {
			seen[e] = true
			out = append(out, e)
		}
	}
	return out
}

// checkRegistryAccess checks the registry mirror's CA file and login: both
// need an HTTPS mirror (a plain-HTTP one would send the password in clear
// and has no certificate), and only containerd pulls through the mirror.
func (c *checker) checkRegistryAccess(m *Mirrors, o Orchestrator, allowInline bool) {
	const p = "spec.mirrors"
	plain := strings.HasPrefix(m.Registry, "http://")
	if f := m.RegistryCAFile; f != "" {
		switch {
		case m.Registry == "":
			c.errorf(p+".registryCAFile", "registryCAFile without spec.mirrors.registry")
		case plain:
			c.errorf(p+".registryCAFile", "registryCAFile for the plain-HTTP mirror %s: a CA signs an HTTPS mirror's certificate", q(m.Registry))
		}
		if err := checkPath(f); err != nil {
			c.errorf(p+".registryCAFile", "invalid CA file: %v", err)
		}
	}
	if l := m.RegistryLogin; l != nil {
		switch {
		case m.Registry == "":
			c.errorf(p+".registryLogin", "registryLogin without spec.mirrors.registry")
		case plain:
			c.errorf(p+".registryLogin", "a login for the plain-HTTP mirror %s would send its password in clear: serve the mirror over HTTPS", q(m.Registry))
		}
		if !validUsername(l.Username) {
			// Harbor's robot accounts hold $ and +: any printable ASCII
			// but the colon basic authentication separates it by
			c.errorf(p+".registryLogin.username", "invalid registry username %s: printable ASCII without spaces or a colon", q(l.Username))
		}
		if l.Password == nil {
			c.errorf(p+".registryLogin.password", "a registry login needs a password: {env: NAME} or {file: PATH}")
		}
		c.checkSecret(p+".registryLogin.password", l.Password, allowInline)
	}
	if (m.RegistryCAFile != "" || m.RegistryLogin != nil) && o == Swarm {
		c.warnf(p+".registry", "registryCAFile and registryLogin are containerd's (kubernetes): swarm's dockerd does not pull through spec.mirrors.registry")
	}
}

func validUsername(u string) bool {
	if u == "" || len(u) > 256 {
		return false
	}
	for _, r := range u {
		if r <= ' ' || r > '~' || r == ':' {
			return false
		}
	}
	return true
}

// coverExactly is the fewest prefixes that together hold exactly addrs:
// runs of consecutive addresses become aligned blocks.
func coverExactly(addrs []netip.Addr) []netip.Prefix {
	slices.SortFunc(addrs, func(a, b netip.Addr) int { return a.Compare(b) })
	addrs = slices.Compact(addrs)
	var out []netip.Prefix
	for i := 0; i < len(addrs); {
		// the run addrs[i..j]
		j := i
		for j+1 < len(addrs) && addrs[j].Next() == addrs[j+1] {
			j++
		}
		out = append(out, rangePrefixes(addrs[i], addrs[j])...)
		i = j + 1
	}
	return out
}

// rangePrefixes splits lo..hi (one family) into aligned prefixes, largest
// first from lo.
func rangePrefixes(lo, hi netip.Addr) []netip.Prefix {
	var out []netip.Prefix
	for {
		bits := lo.BitLen()
		// the largest block that starts at lo and ends at or before hi
		for bits > 0 {
			p, err := lo.Prefix(bits - 1)
			if err != nil || p.Addr() != lo || lastOf(p).Compare(hi) > 0 {
				break
			}
			bits--
		}
		p := netip.PrefixFrom(lo, bits)
		out = append(out, p)
		last := lastOf(p)
		if last.Compare(hi) >= 0 || !last.Next().IsValid() {
			return out
		}
		lo = last.Next()
	}
}

// lastOf is the last address of p.
func lastOf(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}
