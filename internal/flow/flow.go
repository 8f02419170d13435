// Package flow is where every command's work is written down: one file per
// command, each one readable list of phases in the order they run (like
// k0sctl's actions or kubeadm's phase workflow). A newcomer finds every step
// of `gpukit preflight` in preflight.go; `init`, `add-node`, `upgrade
// driver` and `kubeflow deploy` each get their own file. The CLI loads the
// inventory, builds the command's Flow here, runs it and reports.
package flow

import (
	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/inventory"
)

// Flow is one command's work: what it is called, the machines it works on
// (every host, or the subset a command such as add-node touches) and its
// phases, in order.
type Flow struct {
	// Name is the command, for the display and the logs ("gpukit preflight").
	Name     string
	Machines []inventory.Machine
	Phases   []engine.Phase
}
