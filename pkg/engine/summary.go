package engine

import (
	"time"

	"github.com/gpukit/gpukit/pkg/event"
	"github.com/gpukit/gpukit/pkg/facts"
)

// Status is the outcome of a host, or of one phase on a host.
type Status string

const (
	// StatusOK: every phase ran (or was already converged) on the host.
	StatusOK Status = "ok"
	// StatusFailed: a phase failed on the host, or it could not be reached.
	StatusFailed Status = "failed"
	// StatusSkipped: for a host, the run stopped or was cancelled before the
	// host finished; for a phase, the host was converged, stopped or cancelled.
	StatusSkipped Status = "skipped"
)

// Summary is the outcome of a run, host by host.
type Summary struct {
	// Name is the command that ran ("gpukit init").
	Name     string
	Started  time.Time
	Duration time.Duration
	DryRun   bool
	// Cancelled is true when the run's context ended it.
	Cancelled bool
	// Phases are the phases that were selected, in order.
	Phases []string
	// LogDir is the run's log directory, empty without Runner.LogDir.
	LogDir string
	// Hosts are in inventory order.
	Hosts []HostResult
}

// HostResult is what happened on one host.
type HostResult struct {
	Host    string
	Address string
	Status  Status
	// Phase is the phase that failed (StatusFailed) or during or before
	// which the host stopped (StatusSkipped).
	Phase string
	// Err is the *HostError of a failed host.
	Err error
	// Reason says why a host was skipped.
	Reason   string
	Duration time.Duration
	// Phases are the phases that reached this host, in order.
	Phases []PhaseResult
	// LogFile is the host's log, empty without Runner.LogDir.
	LogFile string
	// Facts are what the run probed on the host; nil if it got no facts.
	Facts *facts.Facts
	// Changed is set when a write step ran on the host (Apply, Upload, a
	// reboot); in dry-run, when one would have.
	Changed bool
}

// PhaseResult is one phase on one host.
type PhaseResult struct {
	Phase    string
	Status   Status
	Reason   string
	Duration time.Duration
}

// Failed returns the failed hosts, in inventory order.
func (s *Summary) Failed() []HostResult {
	var out []HostResult
	for _, h := range s.Hosts {
		if h.Status == StatusFailed {
			out = append(out, h)
		}
	}
	return out
}

// Counts returns how many hosts ended in each status.
func (s *Summary) Counts() (ok, failed, skipped int) {
	for _, h := range s.Hosts {
		switch h.Status {
		case StatusOK:
			ok++
		case StatusFailed:
			failed++
		default:
			skipped++
		}
	}
	return ok, failed, skipped
}

// HostCounts returns how many hosts the run changed, left unchanged and
// failed; each host is in exactly one of the three.
func (s *Summary) HostCounts() event.HostCounts {
	var c event.HostCounts
	for _, h := range s.Hosts {
		switch {
		case h.Status == StatusFailed:
			c.Failed++
		case h.Changed:
			c.Changed++
		default:
			c.Unchanged++
		}
	}
	return c
}

// Host returns the result of the named host.
func (s *Summary) Host(name string) (HostResult, bool) {
	for _, h := range s.Hosts {
		if h.Host == name {
			return h, true
		}
	}
	return HostResult{}, false
}

// Err returns nil when no host failed, else a *HostsFailedError wrapping
// ErrSomeHostsFailed and every host's *HostError.
func (s *Summary) Err() error {
	if s == nil {
		return nil
	}
	failed := s.Failed()
	if len(failed) == 0 {
		return nil
	}
	errs := make([]error, len(failed))
	for i, h := range failed {
		errs[i] = h.Err
	}
	return &HostsFailedError{Failed: len(failed), Total: len(s.Hosts), Errs: errs}
}
