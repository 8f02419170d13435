// Package flow is where every command's work is written down: one file per
// command, each one readable list of phases in the order they run (like
// k0sctl's actions or kubeadm's phase workflow). A newcomer finds every step
// of `gpukit preflight` in preflight.go; `init`, `add-node`, `upgrade
// driver` and `kubeflow deploy` each get their own file. The CLI loads the
// inventory, builds the command's Flow here, runs it and reports.
package flow

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/safetext"
)

// Flow is one command's work: what it is called, the machines it works on
// (every host, or the subset a command such as add-node touches) and its
// phases, in order.
type Flow struct {
	// Name is the command, for the display and the logs ("gpukit preflight").
	Name     string
	Machines []inventory.Machine
	Phases   []engine.Phase
	// local: the phases work through the cluster's API from this machine
	// (a kubeconfig), so Run connects to no host.
	local bool
}

// named returns the machines of inv called names, in the order named; names
// not in the inventory (all of them, in one error) or named twice are an
// error (the commands make it a usage error: nothing is contacted).
func named(inv *inventory.Inventory, names []string, notFound string) ([]inventory.Machine, error) {
	var (
		out     []inventory.Machine
		unknown []string
	)
	for i, n := range names {
		j := slices.IndexFunc(inv.Machines, func(m inventory.Machine) bool { return m.Name == n })
		switch {
		case j < 0:
			unknown = append(unknown, safetext.Name(n))
		case slices.Contains(names[:i], n):
			return nil, fmt.Errorf("%s is named twice", safetext.Name(n))
		default:
			out = append(out, inv.Machines[j])
		}
	}
	switch len(unknown) {
	case 0:
		return out, nil
	case 1:
		return nil, fmt.Errorf("%s is not in the inventory%s", unknown[0], notFound)
	}
	return nil, fmt.Errorf("%s are not in the inventory%s", strings.Join(unknown, ", "), notFound)
}
