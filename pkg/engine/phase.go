package engine

import (
	"context"
	"slices"
)

// Phase is one named stage of a command, run on each of its target hosts.
type Phase interface {
	// Name is a stable path ("preflight/facts", "nvidia/driver") used to
	// select phases (SelectPhases), and in events and logs.
	Name() string
	// Title is a short human description ("Install the NVIDIA driver").
	Title() string
	// Run does the phase's work on h through h's step helpers. It must return
	// promptly once ctx is done.
	Run(ctx context.Context, h *Host) error
}

// Targeter is a Phase that runs on a subset of the healthy hosts, e.g. only
// the first control-plane host for kubeadm init. hosts is in inventory order;
// the result must be a subset of it.
type Targeter interface {
	Targets(hosts []*Host) []*Host
}

// ShouldRunner is a Phase that can tell, by reading the host, that there is
// nothing to do (driver already at the wanted version). A false result skips
// the host with reason; an error fails it. ShouldRun runs in dry-run too.
type ShouldRunner interface {
	ShouldRun(ctx context.Context, h *Host) (run bool, reason string, err error)
}

// Preparer is a Phase with cluster-scoped work to do once per run before it
// runs on any host: comparing the facts of every host, creating the join
// token that the workers of the next phase use. all are the run's healthy
// hosts and targets the ones the phase will run on, both in inventory order.
// Prepare may run steps on any of them (they are reported under this phase)
// and keep what it learns in the phase's struct for Run, which reads it
// without locking: every Run starts after Prepare returned. An error fails
// every target with it.
type Preparer interface {
	Prepare(ctx context.Context, all, targets []*Host) error
}

// PlannedAction is one write a Planner would make.
type PlannedAction struct {
	// Step names the action ("install nvidia-driver-580").
	Step string
	// Script is the script that would run; empty for an upload.
	Script string
	// Path is an upload's destination; empty for a script.
	Path string
}

// Planner is a Phase that can describe its writes without making them. In
// dry-run the runner calls Plan instead of Run, so that phases whose later
// steps need the results of earlier writes still give an exact plan. Phases
// without Plan are run in dry-run with their writes gated by Host.Apply.
type Planner interface {
	Plan(ctx context.Context, h *Host) ([]PlannedAction, error)
}

// ParallelLimiter is a Phase that must not run on more than MaxParallel
// hosts at once, below the run's concurrency (reboots: at most so many hosts
// down together). Zero or less means no limit of its own.
type ParallelLimiter interface {
	MaxParallel() int
}

// CleanUpper is a Phase with scratch state to remove (temp files, a held
// lock). After the last phase, CleanUp runs on every host the phase ran on,
// whether it succeeded or failed, in reverse phase order. It is skipped when
// the run is cancelled: it is tidying, not rollback, and the scripts are
// idempotent, so the next run starts from wherever this one stopped.
// Failures are logged and reported as output; they do not fail the host.
type CleanUpper interface {
	CleanUp(ctx context.Context, h *Host) error
}

// RunStopper is a Phase whose failure on any host stops the run: the phase
// finishes on all its hosts (so that every failure is reported at once), then
// no later phase starts. Without it, a failure stops only that host.
type RunStopper interface {
	StopRunOnFailure() bool
}

// ConnectPhase is the name under which connecting to the hosts is reported.
// It always runs first and cannot be skipped; no Phase may use the name.
const ConnectPhase = "connect"

func stopsRun(p Phase) bool {
	s, ok := p.(RunStopper)
	return ok && s.StopRunOnFailure()
}

// Scoped runs a phase on the named hosts only, whatever else the run
// connects to: `gpukit add-node` prepares new hosts and joins them through a
// manager that the run needs but must not change. The phase keeps its own
// targeting (a Targeter chooses among the named hosts) and every other
// optional interface; a Preparer still sees every healthy host of the run.
type Scoped struct {
	Phase
	Hosts []string
}

// StopRunOnFailure is the scoped phase's.
func (s Scoped) StopRunOnFailure() bool { return stopsRun(s.Phase) }

// unscope returns the phase a Scoped wraps and its hosts among healthy
// (p and healthy when p is not scoped).
func unscope(p Phase, healthy []*hostRun) (Phase, []*hostRun) {
	s, ok := p.(Scoped)
	if !ok {
		return p, healthy
	}
	var out []*hostRun
	for _, hr := range healthy {
		if slices.Contains(s.Hosts, hr.h.Name()) {
			out = append(out, hr)
		}
	}
	return s.Phase, out
}
