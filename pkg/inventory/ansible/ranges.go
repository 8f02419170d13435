package ansible

import (
	"fmt"
	"strconv"
	"strings"
)

// maxExpandedHosts bounds one host pattern, so that a typo such as
// node[1:10000000] is an error instead of an out-of-memory.
const maxExpandedHosts = 100000

// asciiLetters is Python's string.ascii_letters, the alphabet of Ansible's
// letter ranges ("db-[a:f]").
const asciiLetters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"

// splitHostPort separates Ansible's "host:port" suffix from a host pattern.
// A range's own colons are inside brackets; a bare IPv6 address has several
// colons and no port; "[2001:db8::1]:2222" is IPv6 with a port.
func splitHostPort(token string) (pattern string, port string, err error) {
	if strings.HasPrefix(token, "[") {
		if end := strings.Index(token, "]"); end > 0 && strings.Count(token[1:end], ":") > 1 {
			addr, rest := token[1:end], token[end+1:]
			switch {
			case rest == "":
				return addr, "", nil
			case strings.HasPrefix(rest, ":") && isDigits(rest[1:]):
				return addr, rest[1:], nil
			}
			return "", "", fmt.Errorf("invalid host %q", token)
		}
	}
	depth, colons, last := 0, 0, -1
	for i, c := range token {
		switch c {
		case '[':
			depth++
		case ']':
			depth--
		case ':':
			if depth == 0 {
				colons++
				last = i
			}
		}
	}
	switch {
	case colons == 0:
		return token, "", nil
	case colons > 1:
		return token, "", nil // bare IPv6
	case token[last+1:] == "":
		return "", "", fmt.Errorf("invalid host pattern %q: a trailing ':' is reserved for a port", token)
	case !isDigits(token[last+1:]):
		return "", "", fmt.Errorf("invalid port %q in host %q", token[last+1:], token)
	}
	return token[:last], token[last+1:], nil
}

// expandHostPattern expands Ansible's host ranges exactly as Ansible does:
// "node[01:20]" (zero padding follows the start), "10.0.0.[1:20]", steps
// "[1:20:2]", letters "[a:f]", and several ranges in one name.
func expandHostPattern(pattern string) ([]string, error) {
	open := strings.Index(pattern, "[")
	if open < 0 {
		return []string{pattern}, nil
	}
	end := strings.Index(pattern[open:], "]")
	if end < 0 {
		return nil, fmt.Errorf("host pattern %q: '[' without ']'", pattern)
	}
	end += open
	head, spec, tail := pattern[:open], pattern[open+1:end], pattern[end+1:]
	seq, err := expandRange(spec)
	if err != nil {
		return nil, fmt.Errorf("host pattern %q: %w", pattern, err)
	}
	var out []string
	for _, s := range seq {
		rest, err := expandHostPattern(head + s + tail)
		if err != nil {
			return nil, err
		}
		out = append(out, rest...)
		if len(out) > maxExpandedHosts {
			return nil, fmt.Errorf("host pattern %q expands to more than %d hosts", pattern, maxExpandedHosts)
		}
	}
	return out, nil
}

// expandRange expands the inside of one "[begin:end(:step)]".
func expandRange(spec string) ([]string, error) {
	bounds := strings.Split(spec, ":")
	if len(bounds) != 2 && len(bounds) != 3 {
		return nil, fmt.Errorf("range [%s] must be [begin:end] or [begin:end:step]", spec)
	}
	beg, end, step := bounds[0], bounds[1], 1
	if beg == "" {
		beg = "0"
	}
	if end == "" {
		return nil, fmt.Errorf("range [%s] has no end", spec)
	}
	if len(bounds) == 3 {
		n, err := strconv.Atoi(bounds[2])
		if err != nil || n < 1 {
			return nil, fmt.Errorf("range [%s]: step must be a positive number", spec)
		}
		step = n
	}
	if len(beg) == 1 && len(end) == 1 && strings.Contains(asciiLetters, beg) && strings.Contains(asciiLetters, end) {
		i, j := strings.Index(asciiLetters, beg), strings.Index(asciiLetters, end)
		if i > j {
			return nil, fmt.Errorf("range [%s]: begin is after end", spec)
		}
		var out []string
		for k := i; k <= j; k += step {
			out = append(out, asciiLetters[k:k+1])
		}
		return out, nil
	}
	b, errB := strconv.Atoi(beg)
	e, errE := strconv.Atoi(end)
	if errB != nil || errE != nil || b < 0 || e < 0 {
		return nil, fmt.Errorf("range [%s]: begin and end must be numbers or single letters", spec)
	}
	if b > e {
		return nil, fmt.Errorf("range [%s]: begin is after end", spec)
	}
	if (e-b)/step+1 > maxExpandedHosts {
		return nil, fmt.Errorf("range [%s] expands to more than %d hosts", spec, maxExpandedHosts)
	}
	// A leading zero fixes the width, and then both ends must be written at it.
	width := 0
	if len(beg) > 1 && beg[0] == '0' {
		width = len(beg)
		if len(end) != width {
			return nil, fmt.Errorf("range [%s]: begin and end must have the same width when zero-padded", spec)
		}
	}
	var out []string
	for n := b; n <= e; n += step {
		out = append(out, fmt.Sprintf("%0*d", width, n))
	}
	return out, nil
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
