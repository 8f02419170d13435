package ansible

import (
	"reflect"
	"strconv"
	"strings"

	"github.com/gpukit/gpukit/pkg/inventory"
)

// minRange is the shortest run of hosts written as one range entry. Two
// hosts read better spelled out; from three on a range is shorter and, for a
// rack of 200 nodes, the only readable form.
const minRange = 3

// maxRange matches inventory.MaxRangeSize: a longer run is split.
const maxRange = inventory.MaxRangeSize

// compressHosts writes the hosts as spec.hosts entries, folding runs of
// consecutive hosts back into gpukit ranges (gpu-[01:20] at 10.0.0.[1:20])
// when everything but the number is equal. gpukit expands a range with the
// start's zero padding, so a run is only folded when that expansion gives
// back exactly the same names and addresses.
func compressHosts(hosts []*mappedHost) []inventory.Host {
	var out []inventory.Host
	for i := 0; i < len(hosts); {
		j := runEnd(hosts, i)
		if j-i >= minRange {
			first, last := hosts[i], hosts[j-1]
			h := hostEntry(first)
			h.Name = rangeOf(first.name, last.name)
			h.Address = rangeOf(first.address, last.address)
			out = append(out, h)
			i = j
			continue
		}
		out = append(out, hostEntry(hosts[i]))
		i++
	}
	return out
}

// runEnd returns the end (exclusive) of the longest foldable run from i.
func runEnd(hosts []*mappedHost, i int) int {
	nameAt, addrAt := -1, -1
	j := i + 1
	for ; j < len(hosts) && j-i < maxRange; j++ {
		a, b := hosts[j-1], hosts[j]
		if !sameSettings(a, b) || strings.Contains(a.address, ":") {
			break
		}
		n, ok := successor(hosts[i].name, a.name, b.name, nameAt)
		if !ok {
			break
		}
		d, ok := successor(hosts[i].address, a.address, b.address, addrAt)
		if !ok {
			break
		}
		nameAt, addrAt = n, d
	}
	return j
}

// sameSettings reports whether two hosts differ in nothing but name and address.
func sameSettings(a, b *mappedHost) bool {
	return reflect.DeepEqual(a.roles, b.roles) && reflect.DeepEqual(a.labels, b.labels) &&
		reflect.DeepEqual(a.taints, b.taints) && reflect.DeepEqual(a.ssh, b.ssh)
}

// successor reports whether b follows a in a run that starts at start: the
// same text except one number (at token index at, or anywhere when at < 0)
// that is one larger, written the way the run's start fixes (zero-padded to
// its width, or without leading zeros). It returns the token index.
func successor(start, a, b string, at int) (int, bool) {
	ta, tb, ts := numberTokens(a), numberTokens(b), numberTokens(start)
	if len(ta) != len(tb) || len(ta) != len(ts) {
		return 0, false
	}
	diff := -1
	for k := range ta {
		if ta[k] == tb[k] {
			continue
		}
		if diff >= 0 {
			return 0, false
		}
		diff = k
	}
	if diff < 0 || (at >= 0 && diff != at) || !isDigits(ta[diff]) || !isDigits(tb[diff]) {
		return 0, false
	}
	first := ts[diff]
	na, errA := strconv.Atoi(ta[diff])
	nb, errB := strconv.Atoi(tb[diff])
	if errA != nil || errB != nil || nb != na+1 || len(tb[diff]) > 9 {
		return 0, false
	}
	if len(first) > 1 && first[0] == '0' {
		return diff, len(tb[diff]) == len(first) // padded: fixed width
	}
	return diff, tb[diff] == strconv.Itoa(nb) // unpadded: no leading zeros
}

// numberTokens splits s into alternating runs of digits and non-digits.
func numberTokens(s string) []string {
	var out []string
	for i := 0; i < len(s); {
		j := i + 1
		digit := s[i] >= '0' && s[i] <= '9'
		for j < len(s) && (s[j] >= '0' && s[j] <= '9') == digit {
			j++
		}
		out = append(out, s[i:j])
		i = j
	}
	return out
}

// rangeOf writes the gpukit range spanning first..last, which differ in one
// number token.
func rangeOf(first, last string) string {
	tf, tl := numberTokens(first), numberTokens(last)
	for k := range tf {
		if tf[k] != tl[k] {
			return strings.Join(tf[:k], "") + "[" + tf[k] + ":" + tl[k] + "]" + strings.Join(tf[k+1:], "")
		}
	}
	return first
}
