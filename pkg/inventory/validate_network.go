package inventory

import (
	"fmt"
	"net/netip"
	"strings"
)

// Per-node pod subnets kube-controller-manager allocates by default
// (--node-cidr-mask-size): /24 for IPv4, /64 for IPv6.
const (
	nodeMaskIPv4 = 24
	nodeMaskIPv6 = 64
)

// checkNetwork checks the Kubernetes network layout: well-formed CIDRs that
// overlap neither each other nor the hosts' own addresses (a host inside the
// pod or service range becomes unreachable once the CNI routes it).
func (c *checker) checkNetwork(cl *Cluster, ms []Machine) {
	n := &cl.Spec.Network
	const p = "spec.network"
	if cl.Spec.Orchestrator == Swarm {
		// Not used, but checked: a later switch to kubernetes must not bring
		// unchecked text into a script.
		for _, f := range []struct{ name, v string }{{"podCIDR", n.PodCIDR}, {"serviceCIDR", n.ServiceCIDR}, {"cni", n.CNI}} {
			if f.v == "" {
				continue
			}
			if f.name == "cni" {
				c.checkCNI(p+".cni", f.v)
			} else {
				c.parseCIDRs(p+"."+f.name, f.v)
			}
			c.warnf(p+"."+f.name, "%s is ignored: the orchestrator is swarm", f.name)
		}
		return
	}
	c.checkCNI(p+".cni", n.CNI)

	pods, podsOK := c.parseCIDRs(p+".podCIDR", n.PodCIDR)
	services, servicesOK := c.parseCIDRs(p+".serviceCIDR", n.ServiceCIDR)
	if podsOK {
		c.checkPodCapacity(p+".podCIDR", pods, len(ms), n.CNI)
	}
	if servicesOK {
		for _, s := range services {
			// kube-apiserver refuses larger service ranges.
			if s.Addr().Is4() && s.Bits() < 12 || s.Addr().Is6() && s.Bits() < 108 {
				c.errorf(p+".serviceCIDR", "service CIDR %s is too large; kube-apiserver accepts at most /12 for IPv4 and /108 for IPv6", s)
			}
		}
	}
	if podsOK && servicesOK {
		for _, pod := range pods {
			for _, svc := range services {
				if !pod.Overlaps(svc) {
					continue
				}
				// Blame the one that was written (a default is no mistake).
				if c.isSet(p + ".serviceCIDR") {
					c.errorf(p+".serviceCIDR", "service CIDR %s overlaps pod CIDR %s%s", svc, pod, c.orDefault(p+".podCIDR"))
				} else {
					c.errorf(p+".podCIDR", "pod CIDR %s overlaps service CIDR %s (default)", pod, svc)
				}
			}
		}
	}

	// One message per host entry: a range inside the pod CIDR is one mistake.
	reported := map[int]bool{}
	for i, m := range ms {
		for _, a := range []struct{ field, label, value string }{{"address", "address", m.Address}, {"nodeAddress", "node address", m.NodeAddress}} {
			ip, err := netip.ParseAddr(a.value)
			if err != nil || reported[c.sources[i].entry] {
				continue
			}
			for _, r := range []struct {
				name   string
				ok     bool
				blocks []netip.Prefix
			}{{"podCIDR", podsOK, pods}, {"serviceCIDR", servicesOK, services}} {
				for _, b := range r.blocks {
					if r.ok && b.Contains(ip.Unmap()) && !reported[c.sources[i].entry] {
						reported[c.sources[i].entry] = true
						c.errorf(fmt.Sprintf("spec.hosts[%d].%s", c.sources[i].entry, a.field), "%s %s%s is inside %s %s%s; pick a %s that does not contain host addresses",
							a.label, q(a.value), c.forMachine(i, ms), r.name, b, c.orDefault(p+"."+r.name), r.name)
					}
				}
			}
		}
	}
}

func (c *checker) checkCNI(path, cni string) {
	switch cni {
	case CNIFlannel, CNICalico, CNICilium, CNINone:
	default:
		c.errorf(path, "unknown CNI %s; expected flannel, calico, cilium or none", q(cni))
	}
}

// parseCIDRs parses a CIDR, or an IPv4,IPv6 pair for a dual-stack cluster.
func (c *checker) parseCIDRs(path, s string) ([]netip.Prefix, bool) {
	// netip.ParsePrefix accepts only digits, hex, dots, colons and one
	// slash (no zones), which is all the character checking a CIDR needs.
	var out []netip.Prefix
	for _, part := range strings.Split(s, ",") {
		pr, err := netip.ParsePrefix(part)
		if err != nil {
			c.errorf(path, "invalid CIDR %s; expected an address/prefix such as 10.244.0.0/16, or an IPv4,IPv6 pair", q(part))
			return nil, false
		}
		if pr != pr.Masked() {
			c.errorf(path, "CIDR %s has host bits set; did you mean %s?", q(part), pr.Masked())
			return nil, false
		}
		out = append(out, pr)
	}
	if len(out) > 2 || len(out) == 2 && out[0].Addr().Is4() == out[1].Addr().Is4() {
		c.errorf(path, "%s: a dual-stack cluster takes exactly one IPv4 and one IPv6 CIDR", q(s))
		return nil, false
	}
	return out, true
}

// checkPodCapacity checks the pod CIDR holds one node subnet per host.
// Flannel routes exactly the subnet kube-controller-manager gives each node,
// so a node without one never gets pod networking: an error. Calico and
// Cilium bring their own IPAM, so for them it is only worth a look.
func (c *checker) checkPodCapacity(path string, pods []netip.Prefix, hosts int, cni string) {
	report := c.errorf
	if cni != CNIFlannel {
		report = c.warnf
	}
	for _, pod := range pods {
		mask := nodeMaskIPv4
		if pod.Addr().Is6() {
			mask = nodeMaskIPv6
		}
		if pod.Bits() > mask {
			c.errorf(path, "pod CIDR %s is smaller than one node's /%d subnet", pod, mask)
			continue
		}
		if shift := mask - pod.Bits(); shift < 31 && hosts > 1<<shift {
			report(path, "pod CIDR %s%s holds %d node subnets (/%d each) but the inventory has %d hosts", pod, c.orDefault(path), 1<<shift, mask, hosts)
		}
	}
}
