package ansible

import (
	"fmt"
	"net/netip"
	"reflect"
	"strings"

	"github.com/gpukit/gpukit/pkg/inventory"
)

// finishSSH settles what depends on the whole host's variables: sudo (from
// ansible_become), and the default user, which differs between the tools.
func (c *converter) finishSSH(hosts []*mappedHost) {
	var noUser []string
	for _, m := range hosts {
		if m.become && m.ssh.User != "root" {
			if m.ssh.Sudo == nil {
				m.ssh.Sudo = &inventory.Sudo{}
			}
			on := true
			m.ssh.Sudo.Enabled = &on
		}
		if m.ssh.User == "" {
			noUser = append(noUser, m.src.name)
		}
	}
	if len(noUser) > 0 {
		c.notes.add("", 0, "spec.ssh.user", fmt.Sprintf(
			"%d host(s) have no ansible_user (%s): Ansible logs in as the user who runs it, gpukit as %s; set spec.ssh.user if that is not what you want",
			len(noUser), listNames(noUser, 5), inventory.DefaultSSHUser))
	}
}

// nameHosts gives every host a gpukit name: an RFC 1123 label, because it
// becomes the Kubernetes node name. A fully qualified name is shortened to
// its first label when that stays unique (gpu01.example.com -> gpu01), else
// its dots become dashes; IP addresses always get dashes (10-0-0-1). Renames
// are reported in one note per reason, so 200 renamed hosts are one line.
func (c *converter) nameHosts(hosts []*mappedHost) {
	short := map[string]int{}
	for _, m := range hosts {
		short[shortLabel(m.src.name)]++
	}
	used := map[string]bool{}
	var renamed, deduped []string
	var renamedAt, dedupedAt position
	for _, m := range hosts {
		orig := m.src.name
		name := shortLabel(orig)
		if short[name] > 1 || isIP(orig) {
			name = sanitizeName(strings.ReplaceAll(orig, ".", "-"))
		}
		base := name
		for i := 2; used[name]; i++ {
			name = fmt.Sprintf("%s-%d", strings.TrimRight(truncateLabel(base, 60), "-"), i)
		}
		used[name] = true
		m.name = name
		switch {
		case name != base:
			if deduped == nil {
				dedupedAt = m.src.pos
			}
			deduped = append(deduped, orig+" -> "+name)
		case name != orig:
			if renamed == nil {
				renamedAt = m.src.pos
			}
			renamed = append(renamed, orig+" -> "+name)
		}
	}
	if len(renamed) > 0 {
		c.notes.addf(renamedAt, "host names", "%d renamed, because gpukit host names become Kubernetes node names and must be lowercase RFC 1123 labels (a-z, 0-9, '-', no dots): %s",
			len(renamed), listNames(renamed, 5))
	}
	if len(deduped) > 0 {
		c.notes.addf(dedupedAt, "host names", "%d renamed with a suffix, because their RFC 1123 form was already taken: %s", len(deduped), listNames(deduped, 5))
	}
}

// shortLabel is the sanitised first label of a name.
func shortLabel(name string) string {
	if isIP(name) {
		return sanitizeName(strings.ReplaceAll(name, ".", "-"))
	}
	first, _, _ := strings.Cut(sanitizeName(name), ".")
	return first
}

func truncateLabel(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

func isIP(s string) bool {
	_, err := netip.ParseAddr(s)
	return err == nil
}

// hoistSSH moves every SSH field on which all hosts agree into spec.ssh, so
// that the usual inventory ([all:vars] ansible_user=ubuntu) becomes one line
// instead of one per host. Reflection keeps this right when spec.ssh grows a
// field. A field the hosts disagree on stays per host.
func hoistSSH(hosts []*mappedHost) inventory.SSH {
	var spec inventory.SSH
	if len(hosts) == 0 {
		return spec
	}
	sv := reflect.ValueOf(&spec).Elem()
	for i := 0; i < sv.NumField(); i++ {
		first := reflect.ValueOf(&hosts[0].ssh).Elem().Field(i)
		if first.IsZero() {
			continue
		}
		same := true
		for _, m := range hosts[1:] {
			if !reflect.DeepEqual(first.Interface(), reflect.ValueOf(&m.ssh).Elem().Field(i).Interface()) {
				same = false
				break
			}
		}
		if !same {
			continue
		}
		sv.Field(i).Set(first)
		for _, m := range hosts {
			f := reflect.ValueOf(&m.ssh).Elem().Field(i)
			f.Set(reflect.Zero(f.Type()))
		}
	}
	return spec
}

// hostEntry is the spec.hosts entry of one host.
func hostEntry(m *mappedHost) inventory.Host {
	h := inventory.Host{Name: m.name, Address: m.address, Roles: m.roles, Labels: m.labels, Taints: m.taints}
	if !reflect.ValueOf(m.ssh).IsZero() {
		s := m.ssh
		h.SSH = &s
	}
	return h
}
