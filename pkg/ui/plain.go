package ui

import (
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/gpukit/gpukit/pkg/event"
)

// Plain writes one line per meaningful event, for logs and CI:
//
//	[ 12.3s] gpu-007   nvidia/driver  failed: install driver: exit status 100: ...
//
// No escape codes; host output is printed only with WithVerbose (it is in
// the host logs either way). The summary follows RunDone.
type Plain struct {
	mu      sync.Mutex
	w       io.Writer
	t       *tracker
	verbose bool
	hostW   int
	phaseW  int
	printed bool // the summary
	err     error
}

// NewPlain returns a plain display writing to w.
func NewPlain(w io.Writer, opts ...Option) *Plain {
	o := collect(opts)
	return &Plain{w: w, t: newTracker(o.title), verbose: o.verbose, hostW: 8, phaseW: 8}
}

// Emit prints e if it is worth a line.
func (p *Plain) Emit(e event.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.t.apply(e)
	if e.Type == event.RunStart {
		for _, n := range e.Phases {
			p.phaseW = max(p.phaseW, len(n))
		}
	}
	p.hostW = max(p.hostW, len(e.Host))
	if s := p.format(e); s != "" {
		p.write(s)
	}
	if e.Type == event.RunDone {
		p.write("\n" + summary(p.t, plainStyles(), 0))
		p.printed = true
	}
}

// Close prints the summary if the run ended without RunDone, and returns the
// first write error.
func (p *Plain) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.printed && !p.t.start.IsZero() {
		p.write("\n" + summary(p.t, plainStyles(), 0))
		p.printed = true
	}
	return p.err
}

func (p *Plain) write(s string) {
	if p.err != nil {
		return
	}
	if !strings.HasSuffix(s, "\n") {
		s += "\n"
	}
	_, p.err = io.WriteString(p.w, s)
}

func (p *Plain) format(e event.Event) string {
	at := fmt.Sprintf("[%5.1fs]", e.Time.Sub(p.t.start).Seconds())
	hostLine := func(what string) string {
		return fmt.Sprintf("%s %s  %s  %s", at, pad(e.Host, p.hostW), pad(e.Phase, p.phaseW), what)
	}
	switch e.Type {
	case event.RunStart:
		s := fmt.Sprintf("%s %s: %s; phases %s", at, clean(p.t.title), plural(e.Total, "host", "hosts"), strings.Join(e.Phases, ", "))
		if e.DryRun {
			s += " (dry-run)"
		}
		if e.Log != "" {
			s += "; logs in " + e.Log
		}
		return s
	case event.PhaseStart:
		return fmt.Sprintf("%s == %s: %s on %s", at, e.Phase, clean(e.Title), plural(e.Total, "host", "hosts"))
	case event.PhaseDone:
		return fmt.Sprintf("%s == %s: %d ok, %d failed, %d skipped of %d in %s",
			at, e.Phase, e.Done, e.Failed, e.Skipped, e.Total, dur(e.Duration()))
	case event.HostDone:
		return hostLine("ok (" + dur(e.Duration()) + ")")
	case event.HostFailed:
		return hostLine("failed: " + clean(e.Err))
	case event.HostSkipped:
		return hostLine("skipped: " + clean(e.Message))
	case event.Planned:
		what := "would run: " + clean(e.Step)
		if e.Script == "" {
			what = "would " + clean(e.Step) + ": " + clean(e.Message)
		}
		if p.verbose && e.Script != "" {
			what += "\n" + indentScript(e.Script)
		}
		return hostLine(what)
	case event.StepStart:
		if p.verbose {
			return hostLine("step: " + clean(e.Step))
		}
	case event.Output:
		if p.verbose {
			tag := "out"
			if e.Stream == event.Stderr {
				tag = "err"
			}
			return hostLine(tag + "| " + clean(e.Line))
		}
	}
	return ""
}

// indentScript prints a planned script under its line; each script line is
// cleaned but kept on its own line.
func indentScript(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = "          > " + clean(l)
	}
	return strings.Join(lines, "\n")
}
