package flow

import (
	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/inventory"
)

// Listing is a command's flow as --list-phases prints it, and where its
// inventory came from.
type Listing struct {
	Flow Flow
	// File is the inventory file; "" for the example inventory.
	File         string
	Orchestrator inventory.Orchestrator
}

// List builds a command's flow with build, for the inventory at file (with
// the command line's versions), or for the example inventory (`gpukit
// inventory example`) when file is "": nothing is contacted. A file that
// does not load, or a flow its inventory cannot have, is an *InputError.
func List(file string, o inventory.Overrides, build func(*inventory.Inventory) (Flow, error)) (*Listing, error) {
	var (
		inv *inventory.Inventory
		err error
	)
	if file != "" {
		inv, err = inventory.LoadFile(file, nil, o)
	} else {
		inv, err = inventory.Parse("example.yaml", inventory.Example())
	}
	if err != nil {
		return nil, badInput(err)
	}
	f, err := build(inv)
	if err != nil {
		return nil, badInput(err)
	}
	return &Listing{Flow: f, File: file, Orchestrator: inv.Cluster.Spec.Orchestrator}, nil
}

// Result is --list-phases' final object: the phases, rollouts opened up.
func (l *Listing) Result() *PhaseList {
	return &PhaseList{Header: NewHeader(KindPhases), Command: l.Flow.Name, Orchestrator: string(l.Orchestrator), Phases: engine.List(l.Flow.Phases)}
}

// PhaseList is --list-phases' final object (-o json).
type PhaseList struct {
	Header
	Command      string          `json:"command"`
	Orchestrator string          `json:"orchestrator"`
	Phases       []engine.Listed `json:"phases"`
}
