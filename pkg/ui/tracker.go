package ui

import (
	"container/list"
	"strings"
	"time"

	"github.com/gpukit/gpukit/pkg/event"
)

// tailLines is how many output lines are kept per host for the failure
// summary; they are reset when the host starts a phase, so they are the
// failing phase's last words.
const tailLines = 6

// tracker folds the event stream into what the displays show. Every event
// costs O(1): a 1000-host run emitting output must not slow the display, and
// the views only read the few rows they draw.
type tracker struct {
	title  string
	dryRun bool
	logDir string
	start  time.Time
	hosts  int // total from RunStart; 0 if unknown

	phases  []*phaseStat
	byPhase map[string]*phaseStat
	byHost  map[string]*hostStat
	// working are the hosts inside a phase, oldest start first: the ones that
	// have been at it longest are the ones worth seeing.
	working  *list.List
	failures []*hostStat

	planned int // writes recorded by dry-run

	done   bool
	result event.Event // RunDone
}

type phaseStat struct {
	name, title  string
	total        int
	running      int
	ok, failed   int
	skipped      int
	planned      int
	started      bool
	finished     bool
	startedAt    time.Time
	took         time.Duration
	lastActivity time.Time
	// before are the counts of the earlier waves of a rollout's phase
	// (engine.Rollout: one PhaseStart and PhaseDone per wave).
	before struct {
		total, ok, failed, skipped int
		took                       time.Duration
	}
}

type hostStat struct {
	name      string
	phase     string
	step      string
	since     time.Time
	elem      *list.Element
	tail      [tailLines]string
	tailLen   int
	tailNext  int
	failed    bool
	err       string
	errPhase  string
	log       string
	failedAt  time.Time
	cancelled bool
}

func newTracker(title string) *tracker {
	return &tracker{
		title: title, byPhase: map[string]*phaseStat{}, byHost: map[string]*hostStat{},
		working: list.New(),
	}
}

func (t *tracker) phase(name string) *phaseStat {
	p := t.byPhase[name]
	if p == nil {
		p = &phaseStat{name: name}
		t.byPhase[name] = p
		t.phases = append(t.phases, p)
	}
	return p
}

func (t *tracker) host(name string) *hostStat {
	h := t.byHost[name]
	if h == nil {
		h = &hostStat{name: name}
		t.byHost[name] = h
	}
	return h
}

// apply folds one event in.
func (t *tracker) apply(e event.Event) {
	if t.start.IsZero() {
		t.start = e.Time
	}
	switch e.Type {
	case event.RunStart:
		if e.Title != "" {
			t.title = e.Title
		}
		t.start, t.hosts, t.dryRun, t.logDir = e.Time, e.Total, e.DryRun, e.Log
		for _, n := range e.Phases {
			t.phase(n)
		}
	case event.PhaseStart:
		p := t.phase(e.Phase)
		if p.finished { // the next wave of a rollout
			p.before.total, p.before.ok, p.before.failed, p.before.skipped, p.before.took = p.total, p.ok, p.failed, p.skipped, p.took
			p.finished = false
			p.total = p.before.total + e.Total
		} else {
			p.title, p.total, p.started, p.startedAt = e.Title, e.Total, true, e.Time
		}
	case event.HostStart:
		h := t.host(e.Host)
		t.leave(h)
		h.phase, h.step, h.since = e.Phase, "", e.Time
		h.tailLen, h.tailNext = 0, 0
		h.elem = t.working.PushBack(h)
		t.phase(e.Phase).running++
	case event.StepStart:
		t.host(e.Host).step = e.Step
	case event.Output:
		t.host(e.Host).keep(e.Line)
	case event.Planned:
		t.phase(e.Phase).planned++
		t.planned++
		t.host(e.Host).keep("would " + e.Step)
	case event.HostDone:
		t.leave(t.host(e.Host))
		t.phase(e.Phase).ok++
	case event.HostSkipped:
		h := t.host(e.Host)
		t.leave(h)
		h.cancelled = e.Status == event.StatusCancelled
		t.phase(e.Phase).skipped++
	case event.HostFailed:
		h := t.host(e.Host)
		t.leave(h)
		t.phase(e.Phase).failed++
		h.failed, h.err, h.errPhase, h.log, h.failedAt = true, clean(e.Err), e.Phase, e.Log, e.Time
		if h.err == "" {
			h.err = "failed"
		}
		t.failures = append(t.failures, h)
	case event.PhaseDone:
		p := t.phase(e.Phase)
		// The engine's counts are authoritative (hosts never started after a
		// cancel have no events of their own).
		b := p.before
		p.finished, p.took = true, b.took+e.Duration()
		p.total, p.ok, p.failed, p.skipped = b.total+e.Total, b.ok+e.Done, b.failed+e.Failed, b.skipped+e.Skipped
	case event.RunDone:
		t.done, t.result = true, e
		if e.Log != "" {
			t.logDir = e.Log
		}
	}
	if e.Phase != "" {
		if p := t.byPhase[e.Phase]; p != nil {
			p.lastActivity = e.Time
		}
	}
}

// leave takes h off the working list, if it is on it.
func (t *tracker) leave(h *hostStat) {
	if h.elem == nil {
		return
	}
	t.working.Remove(h.elem)
	h.elem = nil
	if p := t.byPhase[h.phase]; p != nil && p.running > 0 {
		p.running--
	}
}

// keep remembers an output line in the host's ring of last lines. Lines are
// cleaned when shown, not here: most are never shown.
func (h *hostStat) keep(line string) {
	if strings.TrimSpace(line) == "" {
		return
	}
	if len(line) > maxKeptLine {
		line = line[:maxKeptLine]
	}
	h.tail[h.tailNext] = line
	h.tailNext = (h.tailNext + 1) % tailLines
	if h.tailLen < tailLines {
		h.tailLen++
	}
}

// lastLines returns the kept lines, oldest first.
func (h *hostStat) lastLines() []string {
	out := make([]string, 0, h.tailLen)
	for i := 0; i < h.tailLen; i++ {
		out = append(out, clean(h.tail[(h.tailNext-h.tailLen+i+tailLines)%tailLines]))
	}
	return out
}

// counts returns the run's host totals: from RunDone when there is one,
// else from what the events said so far.
func (t *tracker) counts() (ok, failed, skipped, total int) {
	if t.done {
		return t.result.Done, t.result.Failed, t.result.Skipped, t.result.Total
	}
	total = t.hosts
	if total == 0 {
		total = len(t.byHost)
	}
	failed = len(t.failures)
	return total - failed, failed, 0, total
}
