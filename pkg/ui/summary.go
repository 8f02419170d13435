package ui

import (
	"fmt"
	"path/filepath"
	"strings"
)

// maxDetailedFailures is how many failed hosts the summary shows with their
// error and log tail; the rest are named. Detail for the other 990 of a
// 1000-host failure is in their logs.
const maxDetailedFailures = 10

// maxNamedFailures bounds the list of further failed host names.
const maxNamedFailures = 40

// summary renders the end of a run: totals, each failed host with its error
// and last output lines, and where the logs are. width 0 means no limit.
func summary(t *tracker, st styles, width int) string {
	var b strings.Builder
	line := func(s string) {
		if width > 0 {
			s = truncate(s, width)
		}
		b.WriteString(s)
		b.WriteByte('\n')
	}
	ok, failed, skipped, total := t.counts()
	verdict := st.ok("done")
	switch {
	case t.done && t.result.Status == "cancelled":
		verdict = st.warn("cancelled")
	case failed > 0:
		verdict = st.fail("failed")
	case !t.done:
		verdict = st.warn("interrupted")
	}
	took := ""
	if t.done && t.result.DurationMS > 0 {
		took = " in " + dur(t.result.Duration())
	}
	dry := ""
	if t.dryRun {
		dry = st.accent(fmt.Sprintf(" (dry-run: %s recorded, nothing was changed)", plural(t.planned, "write", "writes")))
	}
	changes := ""
	if c := t.result.Hosts; t.done && c != nil {
		verb := "changed"
		if t.dryRun {
			verb = "would change"
		}
		changes = fmt.Sprintf("; %d %s, %d unchanged", c.Changed, verb, c.Unchanged)
	}
	line(fmt.Sprintf("%s %s: %s ok, %s, %s of %s%s%s%s", st.bold(t.title), verdict, fmt.Sprint(ok),
		st.failIf(failed, plural(failed, "failed", "failed")), plural(skipped, "skipped", "skipped"),
		plural(total, "host", "hosts"), took, changes, dry))

	if len(t.failures) > 0 {
		line("")
		line(st.fail(fmt.Sprintf("Failed hosts (%d):", len(t.failures))))
		for i, h := range t.failures {
			if i == maxDetailedFailures {
				break
			}
			line(fmt.Sprintf("  %s  %s  %s", st.fail(h.name), h.errPhase, h.err))
			for _, l := range h.lastLines() {
				line(st.dim("      | " + l))
			}
			if h.log != "" {
				line(st.dim("      log: " + h.log))
			}
		}
		if rest := t.failures[min(len(t.failures), maxDetailedFailures):]; len(rest) > 0 {
			names := make([]string, 0, maxNamedFailures)
			for i, h := range rest {
				if i == maxNamedFailures {
					names = append(names, fmt.Sprintf("and %d more", len(rest)-i))
					break
				}
				names = append(names, h.name)
			}
			line(fmt.Sprintf("  +%d more: %s", len(rest), strings.Join(names, ", ")))
		}
	}
	if t.logDir != "" {
		line("")
		line(st.dim("Logs: " + t.logDir + string(filepath.Separator)))
	}
	return b.String()
}

// failIf paints s as a failure when n > 0.
func (st styles) failIf(n int, s string) string {
	if n > 0 {
		return st.fail(s)
	}
	return s
}
