package inventory

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
)

// LookupFunc resolves a host name to its addresses (net.Resolver.LookupNetIP
// with "ip").
type LookupFunc func(ctx context.Context, host string) ([]netip.Addr, error)

// ResolveNames gives every machine written by DNS name its NodeAddress, once
// at the start of a run: kubeadm's advertise address, the kubelet's node IP
// and swarm's advertise address must be IP addresses. An IPv4 address is
// preferred, as the SSH client's dial would. A machine reached through a
// bastion is left alone: its name may resolve only there, and the phases
// that need an IP say so. A name that resolves to nothing is bad input,
// every one of them named with its position.
func ResolveNames(ctx context.Context, inv *Inventory, lookup LookupFunc) error {
	var errs []error
	for i := range inv.Machines {
		m := &inv.Machines[i]
		if _, err := netip.ParseAddr(m.Address); err == nil || m.Access.Bastion != nil || m.NodeAddress != "" {
			continue
		}
		addrs, err := lookup(ctx, m.Address)
		if err == nil && len(addrs) == 0 {
			err = errors.New("no address")
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: host %s: address %q does not resolve on this machine (%v): the cluster advertises its nodes by IP address; write the host's IP, or make the name resolve here", m.Pos, m.Name, m.Address, err))
			continue
		}
		// IPv4 first, then the order the resolver gave.
		slices.SortStableFunc(addrs, func(x, y netip.Addr) int {
			switch {
			case x.Unmap().Is4() && !y.Unmap().Is4():
				return -1
			case !x.Unmap().Is4() && y.Unmap().Is4():
				return 1
			}
			return 0
		})
		m.NodeAddress = addrs[0].Unmap().String()
	}
	return errors.Join(errs...)
}
