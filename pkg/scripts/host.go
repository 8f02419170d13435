package scripts

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/gpukit/gpukit/pkg/osfamily"
	"github.com/gpukit/gpukit/pkg/ssh"
)

var hostProxyTemplate = parse[HostProxyParams]("host-proxy.sh")

// Proxy modes: write the settings, read what differs, or remove them.
const (
	ProxyApply  = "apply"
	ProxyCheck  = "check"
	ProxyRemove = "remove"
	// ProxyCheckRemove reads which of gpukit's proxy settings are there.
	ProxyCheckRemove = "check-remove"
)

// HostProxyParams point a host at an HTTP proxy (inventory spec.proxy):
// the package manager, the services that pull (containerd, dockerd, the
// kubelet) and gpukit's own downloads.
type HostProxyParams struct {
	Family osfamily.Info
	// Mode is ProxyApply, ProxyCheck or ProxyRemove (HTTP, HTTPS and
	// NoProxy unused).
	Mode string
	// HTTP and HTTPS are the proxy URLs (validated by the inventory).
	HTTP, HTTPS string
	// NoProxy are the destinations reached directly.
	NoProxy []string
	// APTDirect are the destinations apt reaches directly: the site's own
	// noProxy list (apt fetches from no cluster host), of which apt can say
	// only host names and IPv4 addresses.
	APTDirect []string
	// Units get the proxy environment through a systemd drop-in.
	Units []string
}

// Validate refuses a mode, unit or value the files cannot hold as written:
// systemd reads % and \ specially, and quotes and spaces would split an
// Environment= assignment.
func (p HostProxyParams) Validate() error {
	switch p.Mode {
	case ProxyApply, ProxyCheck, ProxyRemove, ProxyCheckRemove:
	default:
		return fmt.Errorf("unknown proxy mode %q", p.Mode)
	}
	if len(p.Units) == 0 {
		return fmt.Errorf("no units to give the proxy to")
	}
	for _, u := range p.Units {
		if !unitName.MatchString(u) {
			return fmt.Errorf("invalid unit name %q", u)
		}
	}
	if p.Mode == ProxyRemove || p.Mode == ProxyCheckRemove {
		return nil
	}
	if p.HTTP == "" && p.HTTPS == "" {
		return fmt.Errorf("no proxy URL")
	}
	for _, v := range append(append([]string{p.HTTP, p.HTTPS}, p.NoProxy...), p.APTDirect...) {
		if strings.ContainsAny(v, "\"'\\%$`; \t\n,") {
			return fmt.Errorf("proxy setting %q holds a character the service files cannot carry", v)
		}
	}
	return nil
}

// assignments are the proxy's environment variables, upper and lower case
// (curl and wget read only the lower; Go reads both).
func (p HostProxyParams) assignments() []string {
	var out []string
	for _, kv := range [][2]string{{"HTTP_PROXY", p.HTTP}, {"HTTPS_PROXY", p.HTTPS}, {"NO_PROXY", strings.Join(p.NoProxy, ",")}} {
		if kv[1] != "" {
			out = append(out, kv[0]+"="+kv[1], strings.ToLower(kv[0])+"="+kv[1])
		}
	}
	return out
}

// EnvFile is /etc/gpukit/proxy.env: the variables, exported, for gpukit's
// scripts to source before they download.
func (p HostProxyParams) EnvFile() (string, error) {
	var b strings.Builder
	b.WriteString("# gpukit: spec.proxy, for gpukit's own downloads (gpukit reset removes this file)\n")
	for _, a := range p.assignments() {
		k, v, _ := strings.Cut(a, "=")
		qv, err := Quote(v)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "export %s=%s\n", k, qv)
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

// DropIn is the systemd drop-in that gives a service the proxy.
func (p HostProxyParams) DropIn() string {
	var b strings.Builder
	b.WriteString("# gpukit: spec.proxy (gpukit reset removes this file)\n[Service]\n")
	for _, a := range p.assignments() {
		fmt.Fprintf(&b, "Environment=\"%s\"\n", a)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// APTConf is apt's proxy configuration. apt has no list of exceptions, only
// a per-host DIRECT: the APTDirect entries that are a host name or an IPv4
// address get one; domains, CIDRs and IPv6 addresses cannot be said.
func (p HostProxyParams) APTConf() string {
	var b strings.Builder
	b.WriteString("// gpukit: spec.proxy (gpukit reset removes this file)\n")
	for _, s := range [][2]string{{"http", p.HTTP}, {"https", p.HTTPS}} {
		if s[1] != "" {
			fmt.Fprintf(&b, "Acquire::%s::Proxy \"%s\";\n", s[0], s[1])
		}
	}
	for _, e := range p.APTDirect {
		if !aptHost(e) {
			continue
		}
		for _, s := range []string{"http", "https"} {
			fmt.Fprintf(&b, "Acquire::%s::Proxy::%s \"DIRECT\";\n", s, e)
		}
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// aptHost says whether apt can name e as a host of its own: a name or an
// IPv4 address, without a port, a leading dot or a prefix length.
func aptHost(e string) bool {
	if a, err := netip.ParseAddr(e); err == nil {
		return a.Is4()
	}
	return e != "" && !strings.ContainsAny(e, "/:*") && !strings.HasPrefix(e, ".")
}

// DNFLine is dnf.conf's proxy line: dnf has one proxy for every scheme (the
// https one, where both are set) and no exceptions.
func (p HostProxyParams) DNFLine() string {
	if p.HTTPS != "" {
		return "proxy=" + p.HTTPS
	}
	return "proxy=" + p.HTTP
}

// HostProxy renders the proxy settings' script for p.Mode.
func HostProxy(p HostProxyParams) (ssh.Command, error) {
	name := map[string]string{ProxyApply: "point the host at the proxy", ProxyCheck: "read the host's proxy settings", ProxyRemove: "remove the proxy settings", ProxyCheckRemove: "read the proxy settings left"}[p.Mode]
	return command(name, hostProxyTemplate, p)
}
