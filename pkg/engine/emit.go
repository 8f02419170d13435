package engine

import (
	"fmt"
	"strings"
	"time"

	"github.com/gpukit/gpukit/pkg/event"
	"github.com/gpukit/gpukit/pkg/redact"
)

// runState is what every host of a run shares: where events go, the secrets
// to remove, the logs and the dry-run switch. It is the single path by which
// anything leaves the engine, so redaction cannot be bypassed.
type runState struct {
	sink     event.Sink
	redactor *redact.Redactor
	logs     *runLogs
	dryRun   bool
	now      func() time.Time
	// reconnectInterval is the pause between Reconnect's attempts; zero:
	// DefaultReconnectInterval.
	reconnectInterval time.Duration
	// readTimeout and writeTimeout bound a step; zero: the defaults.
	readTimeout, writeTimeout time.Duration
}

// emit redacts e, logs it to run.log (the timeline: everything but steps and
// their output, which go to host logs) and passes it to the sink.
func (s *runState) emit(e event.Event) event.Event {
	if e.Time.IsZero() {
		e.Time = s.now()
	}
	e = redactEvent(s.redactor, e)
	if e.Type != event.Output && e.Type != event.StepStart && e.Type != event.Planned {
		s.logs.run.write(e.Time, "", describe(e))
	}
	s.sink.Emit(e)
	return e
}

func redactEvent(r *redact.Redactor, e event.Event) event.Event {
	e.Title = r.String(e.Title)
	e.Step = r.String(e.Step)
	e.Message = r.String(e.Message)
	e.Line = r.String(e.Line)
	e.Script = r.String(e.Script)
	e.Err = r.String(e.Err)
	return e
}

// describe is the log form of an event.
func describe(e event.Event) string {
	who := strings.TrimSpace(e.Host + " " + e.Phase)
	switch e.Type {
	case event.RunStart:
		return fmt.Sprintf("run %s: %d hosts, phases %s, dry-run %v", e.Title, e.Total, strings.Join(e.Phases, " "), e.DryRun)
	case event.PhaseStart:
		return fmt.Sprintf("== phase %s (%s) on %d hosts", e.Phase, e.Title, e.Total)
	case event.PhaseDone:
		return fmt.Sprintf("== phase %s done: %d ok, %d failed, %d skipped of %d in %s",
			e.Phase, e.Done, e.Failed, e.Skipped, e.Total, e.Duration())
	case event.HostStart:
		return fmt.Sprintf("%s: start", who)
	case event.StepStart:
		return fmt.Sprintf("%s: step %s", who, e.Step)
	case event.Output:
		return fmt.Sprintf("%s| %s", e.Stream, e.Line)
	case event.Planned:
		if e.Script == "" {
			return fmt.Sprintf("%s: dry-run, would %s: %s", who, e.Step, e.Message)
		}
		return fmt.Sprintf("%s: dry-run, would run %s:\n%s", who, e.Step, indent(e.Script))
	case event.HostDone:
		return fmt.Sprintf("%s: ok in %s", who, e.Duration())
	case event.HostFailed:
		return fmt.Sprintf("%s: FAILED after %s: %s", who, e.Duration(), e.Err)
	case event.HostSkipped:
		return fmt.Sprintf("%s: skipped: %s", who, e.Message)
	case event.RunDone:
		return fmt.Sprintf("run %s: %d ok, %d failed, %d skipped of %d in %s",
			e.Status, e.Done, e.Failed, e.Skipped, e.Total, e.Duration())
	}
	return fmt.Sprintf("%s %s: %s", e.Type, who, e.Message)
}

func indent(s string) string {
	return "    " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n    ")
}
