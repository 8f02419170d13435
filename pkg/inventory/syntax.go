package inventory

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// charset is an explicit set of characters allowed in a value that reaches a
// shell script or a generated file on a host. Scripts quote every value too;
// the sets are the first line of defence and make a typo such as a stray
// quote fail at load time, with a message naming what is allowed.
type charset int

const (
	charsUser     charset = iota // Linux user names
	charsPath                    // file paths on the operator's machine or a host
	charsURL                     // mirror URLs
	charsRegistry                // registry host[:port][/path]
	charsName                    // host and cluster names
	charsDomain                  // the ingress domain
	charsDNS                     // addresses: IPs and DNS names
	charsLabel                   // Kubernetes label keys and values
	charsTaint                   // kubectl taints: key=value:Effect
	charsEnv                     // environment variable names
)

func (c charset) allows(r rune) bool {
	alnum := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
	switch c {
	case charsUser:
		return alnum || strings.ContainsRune("_.-", r)
	case charsPath:
		return alnum || strings.ContainsRune("_.-/+@~", r)
	case charsURL:
		return alnum || strings.ContainsRune("_.-~:/%+[]", r)
	case charsRegistry:
		return alnum || strings.ContainsRune("_.-:/", r)
	case charsName:
		return r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-'
	case charsDomain:
		return r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '.'
	case charsDNS:
		return alnum || strings.ContainsRune(".-:", r)
	case charsLabel:
		return alnum || strings.ContainsRune("_.-/", r)
	case charsTaint:
		return alnum || strings.ContainsRune("_.-/=:", r)
	case charsEnv:
		return alnum || r == '_'
	}
	return false
}

func (c charset) String() string {
	switch c {
	case charsUser:
		return "letters, digits and _ . -"
	case charsPath:
		return "letters, digits and _ . - / + @ ~"
	case charsURL:
		return "letters, digits and _ . - ~ : / % + [ ]"
	case charsRegistry:
		return "letters, digits and _ . - : /"
	case charsName:
		return "lowercase letters, digits and -"
	case charsDomain:
		return "lowercase letters, digits and . -"
	case charsDNS:
		return "letters, digits and . - (and : in IPv6 addresses)"
	case charsLabel:
		return "letters, digits and _ . - /"
	case charsTaint:
		return "letters, digits and _ . - / = :"
	case charsEnv:
		return "letters, digits and _"
	}
	return "none"
}

// badChar returns an error naming the first character of s outside set c.
func badChar(s string, c charset) error {
	for _, r := range s {
		if !c.allows(r) {
			return fmt.Errorf("%s contains %s, which is not allowed here; allowed characters: %s", q(s), strconv.QuoteRune(r), c)
		}
	}
	return nil
}

// isDNSLabel reports whether s is a lowercase RFC 1123 label (a host or
// cluster name): 1-63 of a-z 0-9 -, not starting or ending with -.
func isDNSLabel(s string) bool {
	if len(s) == 0 || len(s) > 63 || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
			return false
		}
	}
	return true
}

// isDNSName reports whether s is an RFC 1123 host name (dot-separated labels,
// any case, at most 253 characters) whose last label is not all digits, so a
// mistyped IPv4 address such as 10.0.1.300 is not taken for a name.
func isDNSName(s string) bool {
	if len(s) == 0 || len(s) > 253 {
		return false
	}
	labels := strings.Split(s, ".")
	for _, l := range labels {
		if !isDNSLabel(strings.ToLower(l)) {
			return false
		}
	}
	return strings.Trim(labels[len(labels)-1], "0123456789") != ""
}

// checkAddress accepts an IPv4 or IPv6 address (no zone) or a DNS name.
func checkAddress(s string) error {
	if err := badChar(s, charsDNS); err != nil {
		return err
	}
	if ip, err := netip.ParseAddr(s); err == nil {
		return checkHostIP(s, ip)
	}
	if strings.Contains(s, ":") || !isDNSName(s) {
		return fmt.Errorf("%s is neither an IP address nor a DNS name (RFC 1123)", q(s))
	}
	return nil
}

// checkHostIP accepts an address one host can have: unicast, in a range
// that is routed. (A subnet's own broadcast address cannot be told without
// its mask; the limited broadcast can.)
func checkHostIP(s string, ip netip.Addr) error {
	if ip.Zone() != "" {
		return fmt.Errorf("%s has an IPv6 zone; use a global or unique-local address", q(s))
	}
	u := ip.Unmap()
	var why string
	switch {
	case u.IsUnspecified():
		why = "the unspecified address"
	case u.IsMulticast():
		why = "a multicast address"
	case u == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		why = "the broadcast address"
	case u.Is4() && u.As4()[0] == 0:
		why = `in 0.0.0.0/8 ("this network")`
	case u.Is4() && u.As4()[0] >= 240:
		why = "in 240.0.0.0/4 (reserved)"
	case u.Is6() && u.IsLinkLocalUnicast():
		return fmt.Errorf("%s is an IPv6 link-local address, reachable only with a zone; use a global or unique-local address", q(s))
	default:
		return nil
	}
	return fmt.Errorf("%s is %s and cannot be a host address", q(s), why)
}

// normalAddress is the form in which two addresses are compared: canonical
// IPs (fd00:0::1 equals fd00::1, ::ffff:10.0.0.10 equals 10.0.0.10),
// lowercase names without a trailing dot.
func normalAddress(s string) string {
	if ip, err := netip.ParseAddr(s); err == nil {
		return ip.Unmap().String()
	}
	return strings.TrimSuffix(strings.ToLower(s), ".")
}

// checkLabelKey checks a Kubernetes label or taint key: an optional DNS
// subdomain prefix and "/", then a name of at most 63 characters.
func checkLabelKey(k string) error {
	if err := badChar(k, charsLabel); err != nil {
		return err
	}
	prefix, name, hasPrefix := strings.Cut(k, "/")
	if hasPrefix {
		if prefix == "" || len(prefix) > 253 || !isDNSName(prefix) || prefix != strings.ToLower(prefix) {
			return fmt.Errorf("key %s: prefix %s must be a lowercase DNS subdomain (e.g. nvidia.com)", q(k), q(prefix))
		}
	} else {
		name = k
	}
	if strings.Contains(name, "/") {
		return fmt.Errorf("key %s has more than one /", q(k))
	}
	if name == "" || !isLabelValue(name) {
		return fmt.Errorf("key %s: name must be 1-63 characters, alphanumeric at both ends, with - _ . inside", q(k))
	}
	return nil
}

// checkLabelValue checks a Kubernetes label or taint value (may be empty).
func checkLabelValue(v string) error {
	if err := badChar(v, charsLabel); err != nil {
		return err
	}
	if v != "" && !isLabelValue(v) {
		return fmt.Errorf("value %s must be at most 63 characters, alphanumeric at both ends, with - _ . inside", q(v))
	}
	return nil
}

func isLabelValue(s string) bool {
	if len(s) > 63 {
		return false
	}
	alnum := func(b byte) bool { return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' }
	if s == "" || !alnum(s[0]) || !alnum(s[len(s)-1]) {
		return false
	}
	for i := range len(s) {
		if !alnum(s[i]) && !strings.ContainsRune("-_.", rune(s[i])) {
			return false
		}
	}
	return true
}

// checkTaint checks kubectl taint syntax: key[=value]:Effect.
func checkTaint(t string) error {
	if err := badChar(t, charsTaint); err != nil {
		return err
	}
	kv, effect, ok := cutLast(t, ":")
	if !ok {
		return fmt.Errorf("taint %s: expected key[=value]:Effect with Effect NoSchedule, PreferNoSchedule or NoExecute", q(t))
	}
	switch effect {
	case "NoSchedule", "PreferNoSchedule", "NoExecute":
	default:
		return fmt.Errorf("taint %s: effect %s must be NoSchedule, PreferNoSchedule or NoExecute", q(t), q(effect))
	}
	key, value, _ := strings.Cut(kv, "=")
	if err := checkLabelKey(key); err != nil {
		return fmt.Errorf("taint %s: %w", q(t), err)
	}
	if err := checkLabelValue(value); err != nil {
		return fmt.Errorf("taint %s: %w", q(t), err)
	}
	return nil
}

func cutLast(s, sep string) (before, after string, found bool) {
	if i := strings.LastIndex(s, sep); i >= 0 {
		return s[:i], s[i+len(sep):], true
	}
	return s, "", false
}

// checkUser checks a login user name (it is passed to ssh and to sudo -u).
func checkUser(u string) error {
	if err := badChar(u, charsUser); err != nil {
		return err
	}
	if len(u) > 32 || !(u[0] == '_' || u[0] >= 'a' && u[0] <= 'z' || u[0] >= 'A' && u[0] <= 'Z') {
		return fmt.Errorf("user %s must start with a letter or _ and be at most 32 characters", q(u))
	}
	return nil
}

// checkPath checks a file path; "~" may only start it ("~" or "~/...").
func checkPath(p string) error {
	if err := badChar(p, charsPath); err != nil {
		return err
	}
	if i := strings.IndexByte(p, '~'); i > 0 || i == 0 && p != "~" && !strings.HasPrefix(p, "~/") {
		return fmt.Errorf("path %s: ~ may only start a path (~/...)", q(p))
	}
	return nil
}

// checkSemver checks a plain X.Y.Z version without a leading v.
func checkSemver(v string) error {
	parts := strings.Split(v, ".")
	ok := len(parts) == 3
	for _, p := range parts {
		ok = ok && isDecimal(p) && len(p) <= 4 && (p == "0" || p[0] != '0')
	}
	if ok {
		return nil
	}
	if strings.HasPrefix(v, "v") && checkSemver(v[1:]) == nil {
		return fmt.Errorf("malformed version %s; write it without the v: %s", q(v), v[1:])
	}
	return fmt.Errorf("malformed version %s; expected X.Y.Z (digits only, e.g. 1.2.3)", q(v))
}
