package ansible

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/gpukit/gpukit/pkg/safetext"
)

// noteList collects notes during one conversion. A variable set once in
// [all:vars] is seen again for every host; notes are keyed so that it is
// reported once, at the line where it is written.
type noteList struct {
	notes []Note
	seen  map[Note]bool
}

func (l *noteList) add(file string, line int, subject, message string) {
	n := Note{File: file, Line: line, Subject: subject, Message: oneLine(message)}
	if l.seen == nil {
		l.seen = map[Note]bool{}
	}
	if l.seen[n] {
		return
	}
	l.seen[n] = true
	l.notes = append(l.notes, n)
}

// addf adds a note at a source position.
func (l *noteList) addf(pos position, subject, format string, args ...any) {
	l.add(pos.file, pos.line, subject, fmt.Sprintf(format, args...))
}

// sorted orders notes for reading: notes about the whole cluster first, then
// by file in the order the files were given, then by line. Notes at one place
// keep the order they were made in, which follows the inventory.
func (l *noteList) sorted(files []string) []Note {
	rank := func(f string) int {
		if f == "" {
			return -1
		}
		if i := slices.Index(files, f); i >= 0 {
			return i
		}
		return len(files)
	}
	out := slices.Clone(l.notes)
	slices.SortStableFunc(out, func(a, b Note) int {
		return cmp.Or(cmp.Compare(rank(a.File), rank(b.File)), cmp.Compare(a.Line, b.Line))
	})
	return out
}

// maxMessage bounds a note or error message, in characters: values from the Ansible files
// are quoted into them, and one of 100 KB must not flood the terminal.
const maxMessage = 4000

// oneLine makes a message safe to print and to write as a YAML comment:
// one line (a newline would end the comment), nothing a terminal acts on
// (safetext), bounded in length.
func oneLine(s string) string {
	return safetext.Cut(safetext.Escape(strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(s)), maxMessage)
}

// listNames shows up to max names and how many more there are, so that a
// note about 200 hosts stays one readable line.
func listNames(names []string, max int) string {
	if len(names) <= max {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:max], ", "), len(names)-max)
}
