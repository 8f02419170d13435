package ui

import (
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/gpukit/gpukit/pkg/safetext"
)

// maxKeptLine bounds a kept output line: tails are for reading, not archives.
const maxKeptLine = 400

// clean makes text the display did not write (host output, errors, step
// names) safe to print: escape sequences from a remote command must not move
// our cursor or recolour our screen, and one event must stay one line.
func clean(s string) string { return safetext.Line(s) }

// truncate cuts s to width terminal cells, with an ellipsis when it cut.
func truncate(s string, width int) string {
	if width <= 0 {
		return ""
	}
	return ansi.Truncate(s, width, "…")
}

// pad right-pads plain text to width cells.
func pad(s string, width int) string {
	if w := ansi.StringWidth(s); w < width {
		return s + strings.Repeat(" ", width-w)
	}
	return s
}

// dur formats a duration compactly and stably: 850ms, 12.3s, 4m05s, 1h02m.
func dur(d time.Duration) string {
	switch {
	case d < 0:
		d = 0
		fallthrough
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}
