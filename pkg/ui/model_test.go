package ui

import (
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/gpukit/gpukit/pkg/event"
	"github.com/gpukit/gpukit/pkg/ui/internal/synth"
)

// feed returns a model that has seen events up to and including the first
// one for which stop is true (all of them when stop is nil).
func feed(events []event.Event, stop func(i int, e event.Event) bool) *model {
	m := newModel("gpukit init", plainStyles(), func() {})
	var batch []event.Event
	for i, e := range events {
		batch = append(batch, e)
		if stop != nil && stop(i, e) {
			break
		}
	}
	m.Update(batchMsg{events: batch, now: batch[len(batch)-1].Time.Add(1500 * time.Millisecond)})
	return m
}

// view sizes m and returns its screen, checking that it fits.
func view(t *testing.T, m *model, w, h int) string {
	t.Helper()
	m.Update(tea.WindowSizeMsg{Width: w, Height: h})
	v := m.View()
	lines := strings.Split(v, "\n")
	if len(lines) > h-1 {
		t.Errorf("%d lines on a %d-line terminal:\n%s", len(lines), h, v)
	}
	for i, l := range lines {
		if cw := ansi.StringWidth(l); cw > w {
			t.Errorf("line %d is %d cells wide on a %d-cell terminal: %q", i+1, cw, w, l)
		}
	}
	return v
}

func contains(t *testing.T, v string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(v, w) {
			t.Errorf("view lacks %q:\n%s", w, v)
		}
	}
}

func TestViewThreeHosts(t *testing.T) {
	t.Parallel()
	events := synth.Events(synth.Config{Hosts: 3, Concurrency: 2, FailEvery: 2, Lines: 2})
	// Stop when the second wave has started the driver phase: one host
	// failed in the first wave, one is at work.
	waves := 0
	m := feed(events, func(_ int, e event.Event) bool {
		if e.Type == event.StepStart && e.Phase == "nvidia/driver" && e.Host == synth.HostName(2) {
			waves++
		}
		return waves == 1
	})
	v := view(t, m, 120, 40)
	contains(t, v,
		"gpukit init  3 hosts", "1 failed",
		"✓ connect", "3/3", "✓ preflight/facts",
		"▶ nvidia/driver", "2/3  1 running  1 failed",
		"· runtime/toolkit", "pending",
		"Failed (1):", "✗ gpu-0002  nvidia/driver  install driver: exit status 100",
		"Working (1):", "gpu-0003  nvidia/driver", "step of nvidia/driver",
		"ctrl+c to cancel",
	)
	if strings.Contains(v, "more") {
		t.Errorf("nothing should be folded at 3 hosts:\n%s", v)
	}
}

func TestViewThousandHosts(t *testing.T) {
	t.Parallel()
	events := synth.Events(synth.Config{Hosts: 1000, FailEvery: 97, UnreachableEvery: 211, Lines: 3})
	// Stop in the middle of the driver phase, its seventh wave at work.
	started := 0
	m := feed(events, func(_ int, e event.Event) bool {
		if e.Type == event.StepStart && e.Phase == "nvidia/driver" {
			started++
		}
		return started == 7*64
	})
	v := view(t, m, 120, 40)
	contains(t, v,
		"1000 hosts", "✗ connect", "1000/1000  4 failed",
		"▶ nvidia/driver", "64 running",
		"Failed (", "earlier", "connection refused",
		"Working (64):", "more",
	)
	// Resize: the same state redrawn on a small terminal still fits.
	small := view(t, m, 80, 15)
	contains(t, small, "1000 hosts", "nvidia/driver", "Working (64):")
	// A tiny terminal neither panics nor overflows by much.
	m.Update(tea.WindowSizeMsg{Width: 20, Height: 4})
	_ = m.View()
}

func TestViewFoldsManyPhases(t *testing.T) {
	t.Parallel()
	var phases []string
	for _, p := range []string{"preflight", "os", "nvidia", "runtime", "kubernetes", "addons"} {
		phases = append(phases, p+"/one", p+"/two", p+"/three")
	}
	events := synth.Events(synth.Config{Hosts: 10, Phases: phases})
	m := feed(events, func(_ int, e event.Event) bool { return e.Type == event.PhaseStart && e.Phase == "kubernetes/one" })
	v := view(t, m, 100, 20)
	contains(t, v, "phases done", "▶ kubernetes/one", "more phases")
}

func TestRunDoneQuitsAndKeepsPhases(t *testing.T) {
	t.Parallel()
	events := synth.Events(synth.Config{Hosts: 30, Concurrency: 8, FailEvery: 7, Lines: 4})
	m := newModel("gpukit init", plainStyles(), func() {})
	_, cmd := m.Update(batchMsg{events: events})
	if cmd == nil || !m.quitting {
		t.Fatal("RunDone did not end the program")
	}
	if _, ok := cmd().(tea.QuitMsg); !ok {
		t.Fatal("RunDone did not quit")
	}
	v := view(t, m, 120, 40)
	contains(t, v, "✗ nvidia/driver", "✓ runtime/toolkit")
	if strings.Contains(v, "Working") || strings.Contains(v, "ctrl+c") {
		t.Errorf("the final view still shows live parts:\n%s", v)
	}
	s := summary(m.t, plainStyles(), 0)
	contains(t, s, "gpukit init failed: 26 ok, 4 failed, 0 skipped of 30 hosts",
		"Failed hosts (4):", "gpu-0007  nvidia/driver  install driver", "| E: Unable to locate package", "log: /var/log/gpukit")
}

func TestSummaryOfManyFailures(t *testing.T) {
	t.Parallel()
	events := synth.Events(synth.Config{Hosts: 1000, FailEvery: 2})
	m := feed(events, nil)
	s := summary(m.t, plainStyles(), 0)
	if n := strings.Count(s, "log: "); n != maxDetailedFailures {
		t.Errorf("%d detailed failures, want %d", n, maxDetailedFailures)
	}
	contains(t, s, "Failed hosts (500):", "+490 more: gpu-0022, ", "and 450 more")
}

func TestCtrlCCancelsThenQuits(t *testing.T) {
	t.Parallel()
	cancelled := 0
	m := newModel("x", plainStyles(), func() { cancelled++ })
	ctrlC := tea.KeyMsg{Type: tea.KeyCtrlC}
	if _, cmd := m.Update(ctrlC); cmd != nil || cancelled != 1 {
		t.Fatalf("first ctrl+c: cmd %v, cancelled %d", cmd, cancelled)
	}
	if !strings.Contains(m.View(), "cancelling") {
		t.Errorf("view does not say it is cancelling:\n%s", m.View())
	}
	if _, cmd := m.Update(ctrlC); cmd == nil || cancelled != 1 {
		t.Fatal("second ctrl+c did not quit")
	}
	// Without a cancel func the display quits and passes the interrupt on.
	m2 := newModel("x", plainStyles(), nil)
	if _, cmd := m2.Update(ctrlC); cmd == nil || !m2.interrupted {
		t.Fatal("ctrl+c without cancel did not quit")
	}
}

// Host output can carry escape codes and newlines; the view must stay intact.
func TestHostTextIsCleaned(t *testing.T) {
	t.Parallel()
	if got := clean("\x1b[31mred\x1b[0m\tand\nnext\x07"); got != "red and | next" {
		t.Errorf("clean = %q", got)
	}
}

// The display keeps up with a big, chatty run: folding every event in is
// O(1) and a frame reads only the rows it draws. Run with -bench to see the
// cost per event and per frame at 1000 hosts.
func BenchmarkApply1000Hosts(b *testing.B) {
	events := synth.Events(synth.Config{Hosts: 1000, FailEvery: 97, Lines: 20})
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tr := newTracker("x")
		for _, e := range events {
			tr.apply(e)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(events)), "ns/event")
}

func BenchmarkView1000Hosts(b *testing.B) {
	events := synth.Events(synth.Config{Hosts: 1000, FailEvery: 97, Lines: 3})
	started := 0
	m := feed(events, func(_ int, e event.Event) bool {
		if e.Type == event.StepStart && e.Phase == "nvidia/driver" {
			started++
		}
		return started == 7*64
	})
	m.Update(tea.WindowSizeMsg{Width: 200, Height: 60})
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_ = m.View()
	}
}

// A rollout's phases start and finish once per wave: the counts add up
// over the waves instead of showing the last wave's.
func TestTrackerAddsUpWaves(t *testing.T) {
	t.Parallel()
	tr := newTracker("gpukit upgrade driver")
	at := time.Date(2026, 12, 2, 17, 0, 0, 0, time.UTC)
	tr.apply(event.Event{Type: event.RunStart, Time: at, Total: 4, Phases: []string{"connect", "upgrade/rollout", "upgrade/cordon"}})
	for wave, hosts := range [][]string{{"gpu-1", "gpu-2"}, {"gpu-3", "gpu-4"}} {
		tr.apply(event.Event{Type: event.PhaseStart, Phase: "upgrade/cordon", Total: 2, Time: at})
		for _, h := range hosts {
			tr.apply(event.Event{Type: event.HostStart, Phase: "upgrade/cordon", Host: h, Time: at})
			tr.apply(event.Event{Type: event.HostDone, Phase: "upgrade/cordon", Host: h, Time: at})
		}
		failed := 0
		if wave == 1 {
			failed = 1
		}
		tr.apply(event.Event{Type: event.PhaseDone, Phase: "upgrade/cordon", Total: 2, Done: 2 - failed, Failed: failed, DurationMS: 1000, Time: at})
	}
	p := tr.byPhase["upgrade/cordon"]
	if p.total != 4 || p.ok != 3 || p.failed != 1 || !p.finished || p.took != 2*time.Second {
		t.Errorf("after two waves: total %d ok %d failed %d finished %v took %s", p.total, p.ok, p.failed, p.finished, p.took)
	}
}
