package ui

import (
	"fmt"
	"strings"
	"time"
)

// Default size when the terminal has not told us yet.
const (
	defaultWidth  = 100
	defaultHeight = 24
	maxFailRows   = 5
)

// View draws the live screen: header, one progress line per phase, the
// failures so far and the hosts at work, fitted to the terminal. After the
// run only the header and phases stay; the summary is printed below them.
func (m *model) View() string {
	w, h := m.width, m.height
	if w <= 0 {
		w = defaultWidth
	}
	if h <= 0 {
		h = defaultHeight
	}
	// One line fewer than the screen, so that the cursor line never scrolls
	// the top of the view away.
	budget := max(h-1, 2)
	lines := []string{m.header()}
	if m.quitting {
		lines = append(lines, m.phaseLines(w, budget-1)...)
		// bubbletea erases the line the cursor is on when it stops: give it
		// an empty one, so the last phase stays on screen.
		return fit(lines, w) + "\n"
	}
	phaseRows := max(1, min(len(m.t.phases), max(3, budget/3), budget-2))
	lines = append(lines, m.phaseLines(w, phaseRows)...)
	rest := budget - len(lines) - 1 // the footer
	if n := len(m.t.failures); n > 0 && rest >= 2 {
		rows := min(n+1, maxFailRows+1, max(2, rest/3))
		lines = append(lines, m.failureLines(rows)...)
		rest -= rows
	}
	if rest >= 2 && m.t.working.Len() > 0 {
		lines = append(lines, m.workingLines(rest)...)
	}
	lines = append(lines, m.footer())
	return fit(lines, w)
}

func fit(lines []string, width int) string {
	for i, l := range lines {
		lines[i] = truncate(l, width)
	}
	return strings.Join(lines, "\n")
}

func (m *model) header() string {
	st := m.st
	ok, failed, _, total := m.t.counts()
	s := fmt.Sprintf("%s  %s  %s", st.bold(m.t.title), st.dim(plural(total, "host", "hosts")),
		dur(m.clock().Sub(m.t.start).Truncate(100*time.Millisecond)))
	if m.t.dryRun {
		s += "  " + st.accent("dry-run")
	}
	if failed > 0 {
		s += "  " + st.fail(fmt.Sprintf("%d failed", failed))
	} else if m.t.done {
		s += "  " + st.ok(fmt.Sprintf("%d ok", ok))
	}
	if m.cancelling && !m.t.done {
		s += "  " + st.warn("cancelling…")
	}
	return s
}

// phaseLines draws at most rows phase lines. With more phases than rows,
// finished phases fold into one line and the last ones are counted.
func (m *model) phaseLines(width, rows int) []string {
	phases := m.t.phases
	if rows <= 0 || len(phases) == 0 {
		return nil
	}
	var lines []string
	if len(phases) > rows {
		folded := 0
		for folded < len(phases) && phases[folded].finished && len(phases)-folded > rows-1 {
			folded++
		}
		if folded > 0 {
			lines = append(lines, m.st.ok("✓")+" "+m.st.dim(plural(folded, "phase done", "phases done")))
			phases = phases[folded:]
		}
	}
	nameW := 0
	for _, p := range m.t.phases {
		nameW = max(nameW, len(p.name))
	}
	barW := min(max(width-nameW-44, 10), 40)
	for i, p := range phases {
		if len(lines) >= rows {
			break
		}
		if len(lines) == rows-1 && len(phases)-i > 1 {
			lines = append(lines, m.st.dim(fmt.Sprintf("  +%d more phases", len(phases)-i)))
			break
		}
		lines = append(lines, m.phaseLine(p, nameW, barW))
	}
	return lines
}

func (m *model) phaseLine(p *phaseStat, nameW, barW int) string {
	st := m.st
	icon := st.warn("▶")
	switch {
	case !p.started:
		return fmt.Sprintf("%s %s %s", st.dim("·"), pad(p.name, nameW), st.dim("pending"))
	case p.finished && p.failed > 0:
		icon = st.fail("✗")
	case p.finished:
		icon = st.ok("✓")
	}
	done := p.ok + p.failed + p.skipped
	digits := len(fmt.Sprint(p.total))
	s := fmt.Sprintf("%s %s %s %*d/%d", icon, pad(p.name, nameW), m.bar(p, barW), digits, done, p.total)
	if p.running > 0 && !p.finished {
		s += st.warn(fmt.Sprintf("  %d running", p.running))
	}
	if p.failed > 0 {
		s += st.fail(fmt.Sprintf("  %d failed", p.failed))
	}
	if p.skipped > 0 {
		s += st.dim(fmt.Sprintf("  %d skipped", p.skipped))
	}
	if p.planned > 0 {
		s += st.accent(fmt.Sprintf("  %d planned", p.planned))
	}
	took := p.took
	if !p.finished {
		took = m.clock().Sub(p.startedAt)
	}
	return s + st.dim("  "+dur(took.Truncate(100*time.Millisecond)))
}

// bar draws ok, failed, skipped and running hosts in proportion; a single
// failure or running host among a thousand still gets a cell.
func (m *model) bar(p *phaseStat, width int) string {
	if p.total <= 0 {
		return m.st.dim(strings.Repeat("░", width))
	}
	cells := func(n int) int {
		c := n * width / p.total
		if n > 0 && c == 0 {
			c = 1
		}
		return c
	}
	fail, skip, run := cells(p.failed), cells(p.skipped), 0
	if !p.finished {
		run = cells(p.running)
	}
	ok := min(cells(p.ok), width-fail-skip-run)
	if p.finished && p.failed == 0 && p.skipped == 0 {
		ok = width
	}
	ok = max(ok, 0)
	rest := max(width-ok-fail-skip-run, 0)
	return m.st.ok(strings.Repeat("█", ok)) + m.st.fail(strings.Repeat("█", fail)) +
		m.st.dim(strings.Repeat("█", skip)) + m.st.warn(strings.Repeat("▒", run)) +
		m.st.dim(strings.Repeat("░", rest))
}

// failureLines draws the latest failures, newest last, in rows lines.
func (m *model) failureLines(rows int) []string {
	f := m.t.failures
	lines := []string{m.st.fail(fmt.Sprintf("Failed (%d):", len(f)))}
	show := rows - 1
	if len(f) > show {
		show--
		lines = append(lines, m.st.dim(fmt.Sprintf("  +%d earlier", len(f)-show)))
	}
	hostW := 0
	for _, h := range f[len(f)-show:] {
		hostW = max(hostW, len(h.name))
	}
	for _, h := range f[len(f)-show:] {
		lines = append(lines, fmt.Sprintf("  %s %s  %s  %s", m.st.fail("✗"), m.st.fail(pad(h.name, hostW)), h.errPhase, h.err))
	}
	return lines
}

// workingLines draws the hosts at work, longest-running first, in rows
// lines; it reads only the rows it draws.
func (m *model) workingLines(rows int) []string {
	n := m.t.working.Len()
	lines := []string{m.st.bold(fmt.Sprintf("Working (%d):", n))}
	show := rows - 1
	if n > show {
		show--
	}
	type row struct{ name, phase, step, took string }
	shown := make([]row, 0, show)
	hostW, phaseW := 0, 0
	now := m.clock()
	for e := m.t.working.Front(); e != nil && len(shown) < show; e = e.Next() {
		h := e.Value.(*hostStat)
		shown = append(shown, row{h.name, h.phase, clean(h.step), dur(now.Sub(h.since).Truncate(100 * time.Millisecond))})
		hostW, phaseW = max(hostW, len(h.name)), max(phaseW, len(h.phase))
	}
	for _, r := range shown {
		lines = append(lines, fmt.Sprintf("  %s  %s  %7s  %s", pad(r.name, hostW), m.st.dim(pad(r.phase, phaseW)), r.took, r.step))
	}
	if n > len(shown) {
		lines = append(lines, m.st.dim(fmt.Sprintf("  +%d more", n-len(shown))))
	}
	return lines
}

func (m *model) footer() string {
	if m.cancelling {
		return m.st.warn("cancelling: waiting for running steps to stop (ctrl+c again to stop waiting)")
	}
	return m.st.dim("ctrl+c to cancel")
}
