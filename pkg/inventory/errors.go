package inventory

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/gpukit/gpukit/pkg/safetext"
)

// ValidationError is every problem found in one inventory file. Load and
// Parse return it (as error) when the file cannot be used; errors.As finds it.
type ValidationError struct {
	File string
	// Issues are the errors, in file order.
	Issues []Issue
	// Warnings found on the way, for callers that want to show them too.
	Warnings []Issue
}

// Error prints one line per issue, "file:line:col: path: message".
func (e *ValidationError) Error() string {
	lines := make([]string, len(e.Issues))
	for i, is := range e.Issues {
		lines[i] = is.String()
	}
	return strings.Join(lines, "\n")
}

// String formats the position as file:line:column, leaving out what is unknown.
func (p Position) String() string {
	switch {
	case p.Line == 0:
		return p.File
	case p.Column == 0:
		return p.File + ":" + strconv.Itoa(p.Line)
	default:
		return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Column)
	}
}

// String formats the issue as one line: "file:line:col: path: message".
func (i Issue) String() string {
	var b strings.Builder
	b.WriteString(i.Pos.String())
	b.WriteString(": ")
	if i.Path != "" {
		b.WriteString(i.Path)
		b.WriteString(": ")
	}
	b.WriteString(i.Message)
	// Values were quoted (q) when the message was made; this is the last
	// line of defence: one issue is one line, and nothing in it can act on
	// a terminal, whatever a message quotes.
	return safetext.Escape(b.String())
}

// sortIssues orders issues as they appear in the file, so the output reads
// top to bottom; issues without a line (whole-file problems) come first.
func sortIssues(issues []Issue) []Issue {
	slices.SortStableFunc(issues, func(a, b Issue) int {
		return cmp.Or(
			cmp.Compare(a.Pos.Line, b.Pos.Line),
			cmp.Compare(a.Pos.Column, b.Pos.Column),
			cmp.Compare(a.Path, b.Path),
			cmp.Compare(a.Message, b.Message),
		)
	})
	return slices.Compact(issues)
}
