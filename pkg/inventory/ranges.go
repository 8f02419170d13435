package inventory

import (
	"fmt"
	"strconv"
	"strings"
)

// MaxRangeSize is the most hosts one range may expand to. It catches typos
// such as gpu-[1:20000] before they become twenty thousand SSH connections.
const MaxRangeSize = 10000

// MaxHosts is the most hosts one inventory may describe after expansion,
// twice Kubernetes' tested limit of 5000 nodes. Without it a few lines of
// ranges could expand to millions of machines.
const MaxHosts = 10000

// hostRange is a field with one "[start:end]" range, e.g. gpu-[001:200].
type hostRange struct {
	prefix, suffix string
	start, end     int
	width          int // zero padding, from the start token: [001:200] -> 3
}

// parseRange finds the range in s. It returns ok=false, err=nil for a plain
// value without brackets.
func parseRange(s string) (r hostRange, ok bool, err error) {
	open := strings.IndexByte(s, '[')
	if open < 0 {
		if strings.IndexByte(s, ']') >= 0 {
			return r, false, fmt.Errorf("unmatched ']' in %s; a range is written [START:END], e.g. gpu-[001:200]", q(s))
		}
		return r, false, nil
	}
	if strings.Count(s, "[") > 1 {
		return r, false, fmt.Errorf("%s holds more than one range; one range per field", q(s))
	}
	closing := strings.IndexByte(s[open:], ']')
	if closing < 0 {
		return r, false, fmt.Errorf("unterminated range in %s; a range is written [START:END], e.g. gpu-[001:200]", q(s))
	}
	closing += open
	if strings.Count(s, "]") > 1 {
		return r, false, fmt.Errorf("%s holds more than one range; one range per field", q(s))
	}
	startTok, endTok, found := strings.Cut(s[open+1:closing], ":")
	if !found || !isDecimal(startTok) || !isDecimal(endTok) {
		return r, false, fmt.Errorf("malformed range %s; expected [START:END] with decimal numbers, e.g. gpu-[001:200]", q(s[open:closing+1]))
	}
	// isDecimal caps tokens at 9 digits, so Atoi cannot overflow.
	start, _ := strconv.Atoi(startTok)
	end, _ := strconv.Atoi(endTok)
	if end < start {
		return r, false, fmt.Errorf("reversed range [%s:%s]; write [%s:%s]", startTok, endTok, endTok, startTok)
	}
	if n := end - start + 1; n > MaxRangeSize {
		return r, false, fmt.Errorf("range [%s:%s] expands to %d hosts; at most %d per range", startTok, endTok, n, MaxRangeSize)
	}
	r = hostRange{prefix: s[:open], suffix: s[closing+1:], start: start, end: end}
	if padded(startTok) || padded(endTok) {
		// As Ansible: zero padding is written on both ends, the same width;
		// anything else leaves the width to a guess.
		if len(startTok) != len(endTok) {
			w := max(len(startTok), len(endTok), len(strconv.Itoa(end)))
			return r, false, fmt.Errorf("range [%s:%s] mixes zero-padded and unpadded numbers; write [%0*d:%0*d] for names padded to %d digits, or [%d:%d] for none",
				startTok, endTok, w, start, w, end, w, start, end)
		}
		r.width = len(startTok)
	}
	return r, true, nil
}

// padded reports whether a range number is written with leading zeros.
func padded(tok string) bool { return len(tok) > 1 && tok[0] == '0' }

func (r hostRange) count() int { return r.end - r.start + 1 }

// at returns the i-th expanded value (0-based).
func (r hostRange) at(i int) string {
	n := strconv.Itoa(r.start + i)
	if pad := r.width - len(n); pad > 0 {
		n = strings.Repeat("0", pad) + n
	}
	return r.prefix + n + r.suffix
}

func isDecimal(s string) bool {
	if s == "" || len(s) > 9 {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// source ties a machine to the spec.hosts entry it was written as.
type source struct {
	entry   int    // index in spec.hosts
	pattern string // the entry's name when it is a range, else ""
}

// expandHosts turns spec.hosts into machines, one per host, expanding name
// and address ranges in step. Entries with a broken range (or a name or
// address missing, already reported by the decoder) yield no machines.
func (c *checker) expandHosts(hosts []Host) []Machine {
	var machines []Machine
	for i, h := range hosts {
		path := fmt.Sprintf("spec.hosts[%d]", i)
		if h.Name == "" || h.Address == "" {
			continue
		}
		names, nameErr := expandField(h.Name)
		if nameErr != nil {
			c.errorf(path+".name", "%v", nameErr)
		}
		var nodeAddrs []string
		if h.NodeAddress != "" {
			var err error
			if nodeAddrs, err = expandField(h.NodeAddress); err != nil {
				c.errorf(path+".nodeAddress", "%v", err)
				continue
			}
			if nameErr == nil && len(nodeAddrs) != len(names) {
				c.errorf(path+".nodeAddress", "node address %s holds %d addresses but name %s holds %d hosts; the counts must match", q(h.NodeAddress), len(nodeAddrs), q(h.Name), len(names))
				continue
			}
		}
		addrs, addrErr := expandField(h.Address)
		if addrErr != nil {
			c.errorf(path+".address", "%v", addrErr)
		}
		if nameErr != nil || addrErr != nil {
			continue
		}
		switch {
		case len(names) == 1 && len(addrs) > 1:
			c.errorf(path+".address", "address %s is a range of %d addresses but name %s is a single host; give the name a range of the same size", q(h.Address), len(addrs), q(h.Name))
			continue
		case len(names) > 1 && len(addrs) == 1:
			c.errorf(path+".address", "name %s is a range of %d hosts but address %s is a single address; give the address a range of %d too, e.g. 10.0.1.[1:%d]", q(h.Name), len(names), q(h.Address), len(names), len(names))
			continue
		case len(names) != len(addrs):
			c.errorf(path+".address", "address range %s holds %d addresses but name range %s holds %d hosts; the counts must match", q(h.Address), len(addrs), q(h.Name), len(names))
			continue
		}
		if len(machines)+len(names) > MaxHosts {
			c.errorf(path+".name", "the inventory expands to more than %d hosts with this entry (%d so far, %d here); Kubernetes supports up to 5000 nodes per cluster", MaxHosts, len(machines), len(names))
			return machines
		}
		pattern := ""
		if len(names) > 1 || names[0] != h.Name {
			pattern = h.Name
		}
		pos := c.at(path)
		for j := range names {
			var node string
			if nodeAddrs != nil {
				node = nodeAddrs[j]
			}
			machines = append(machines, Machine{
				Name:        names[j],
				Address:     addrs[j],
				NodeAddress: node,
				Roles:       cloneSlice(h.Roles),
				Labels:      cloneMap(h.Labels),
				Taints:      cloneSlice(h.Taints),
				Pos:         pos,
			})
			c.sources = append(c.sources, source{entry: i, pattern: pattern})
		}
	}
	return machines
}

// expandField returns the values a field stands for: itself, or its range.
func expandField(s string) ([]string, error) {
	r, ok, err := parseRange(s)
	if err != nil || !ok {
		return []string{s}, err
	}
	out := make([]string, r.count())
	for i := range out {
		out[i] = r.at(i)
	}
	return out, nil
}

func cloneSlice[T any](s []T) []T {
	if s == nil {
		return nil
	}
	return append([]T(nil), s...)
}

func cloneMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
