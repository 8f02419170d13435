package ansible

import (
	"net/netip"
	"strings"
)

// sanitizeName turns an Ansible inventory name into an RFC 1123 name, which
// gpukit needs because it becomes the Kubernetes node name: lowercase, only
// letters, digits, '-' and '.', every label starting and ending with a letter
// or digit and at most 63 characters long. Ansible accepts almost anything
// ("GPU_01", "rack 3/node").
func sanitizeName(name string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(name) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '.':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	var labels []string
	for _, l := range strings.Split(b.String(), ".") {
		l = strings.Trim(l, "-")
		if len(l) > 63 {
			l = strings.TrimRight(l[:63], "-")
		}
		if l != "" {
			labels = append(labels, l)
		}
	}
	out := strings.Join(labels, ".")
	if len(out) > 253 {
		out = strings.TrimRight(strings.TrimRight(out[:253], "-"), ".")
	}
	if out == "" {
		return "host"
	}
	return out
}

// isAddress reports whether s can be dialled as it is: an IP address or a
// DNS name. An Ansible inventory name without ansible_host is the address
// Ansible connects to, so when it is one, it is gpukit's address too.
func isAddress(s string) bool {
	if _, err := netip.ParseAddr(s); err == nil {
		return true
	}
	return isDNSName(s)
}

// isDNSName accepts RFC 1123 host names in any letter case, except that the
// last label may not be all digits: 10.0.1.300 is a mistyped address, not a
// name (gpukit's loader draws the same line).
func isDNSName(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	labels := strings.Split(strings.TrimSuffix(s, "."), ".")
	if isDigits(labels[len(labels)-1]) {
		return false
	}
	for _, l := range labels {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return false
		}
		for _, c := range l {
			ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-'
			if !ok {
				return false
			}
		}
	}
	return true
}
