// Package event is the stream a gpukit run produces: what started, what each
// host printed, what finished or failed. The engine emits events into a Sink;
// displays (TTY, plain lines, JSON) and tests consume them. It imports nothing
// from gpukit so that any package may depend on it.
//
// The JSON form of Event (one object per line with --output json) is a public
// interface: field names and Type values only ever get added, never renamed.
package event

import "time"

// Type says what happened.
type Type string

// The event types, in the order a run produces them.
const (
	// RunStart opens a run: Title is the command, Total the host count,
	// Phases the phases that will run, Log the per-run log directory.
	RunStart Type = "run_start"
	// PhaseStart: Phase begins on Total hosts; Title is its human title. In a
	// pipeline (host-local phases: a host goes on without waiting for the
	// others) phases overlap: a later one starts while an earlier one still
	// runs, its Total an upper bound (hosts may fail before they get there).
	PhaseStart Type = "phase_start"
	// HostStart: Host begins Phase.
	HostStart Type = "host_start"
	// StepStart: Host begins Step (one command or upload) of Phase.
	StepStart Type = "step_start"
	// Output is one line (Line) a step printed on Stream.
	Output Type = "output"
	// Planned is a write that dry-run recorded instead of running: Step,
	// and Script (the script) or Message (an upload's destination).
	Planned Type = "planned"
	// HostDone: Host finished Phase successfully.
	HostDone Type = "host_done"
	// HostFailed: Host failed Phase with Err; it takes no further part in the run.
	// Log names the host's log file.
	HostFailed Type = "host_failed"
	// HostSkipped: Host did not run Phase; Message says why (already converged,
	// run stopped, cancelled).
	HostSkipped Type = "host_skipped"
	// PhaseDone: Phase finished; Done, Failed, Skipped and Total count its hosts
	// (the ones that reached it). Phases finish in the order of the run.
	PhaseDone Type = "phase_done"
	// RunDone closes a run: Status is ok, failed or cancelled; the counts are
	// per host over the whole run.
	RunDone Type = "run_done"
)

// Stream names the output stream of a line.
type Stream string

const (
	Stdout Stream = "stdout"
	Stderr Stream = "stderr"
)

// Status is the outcome carried by done events.
type Status string

const (
	StatusOK        Status = "ok"
	StatusFailed    Status = "failed"
	StatusSkipped   Status = "skipped"
	StatusCancelled Status = "cancelled"
)

// Event is one thing that happened during a run. Fields that do not apply to a
// Type are zero and omitted from JSON.
type Event struct {
	Time  time.Time `json:"time"`
	Type  Type      `json:"type"`
	Phase string    `json:"phase,omitempty"`
	// Title is the phase title (PhaseStart) or the command (RunStart).
	Title   string `json:"title,omitempty"`
	Host    string `json:"host,omitempty"`
	Step    string `json:"step,omitempty"`
	Message string `json:"message,omitempty"`
	Line    string `json:"line,omitempty"`
	Stream  Stream `json:"stream,omitempty"`
	// Script is the script a Planned write would have run.
	Script string `json:"script,omitempty"`
	Err    string `json:"error,omitempty"`
	Status Status `json:"status,omitempty"`
	// Done counts hosts that succeeded; Failed and Skipped the others; Total
	// all hosts concerned (PhaseStart, PhaseDone, RunStart, RunDone).
	Done    int `json:"done,omitempty"`
	Failed  int `json:"failed,omitempty"`
	Skipped int `json:"skipped,omitempty"`
	Total   int `json:"total,omitempty"`
	// Phases lists the phase names of the run (RunStart).
	Phases []string `json:"phases,omitempty"`
	// Log is a log path: the run directory (RunStart, RunDone) or the host's
	// log file (HostFailed).
	Log string `json:"log,omitempty"`
	// DurationMS is how long the host, phase or run took (done events).
	DurationMS int64 `json:"durationMs,omitempty"`
	// DryRun marks a run that records writes instead of making them (RunStart).
	DryRun bool `json:"dryRun,omitempty"`
	// Hosts says what the run did to its hosts (RunDone only).
	Hosts *HostCounts `json:"hosts,omitempty"`
}

// HostCounts is what a run did to its hosts: every host is counted once, in
// one of Changed (a write ran; in dry-run: a write would run), Unchanged
// (nothing to do, or the run stopped before it) or Failed.
type HostCounts struct {
	Changed   int `json:"changed"`
	Unchanged int `json:"unchanged"`
	Failed    int `json:"failed"`
}

// Duration is DurationMS as a time.Duration.
func (e Event) Duration() time.Duration { return time.Duration(e.DurationMS) * time.Millisecond }

// Millis converts a duration for DurationMS; a non-zero duration under one
// millisecond counts as one so that "took no time" stays distinguishable.
func Millis(d time.Duration) int64 {
	if d > 0 && d < time.Millisecond {
		return 1
	}
	return d.Milliseconds()
}
