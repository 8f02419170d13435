// Package ui shows a run's event stream to a person or a program: a live
// bubbletea view on a terminal, one plain line per event otherwise, or one
// JSON object per line for machines. It depends only on pkg/event, so the
// engine never knows how it is displayed.
package ui

import (
	"context"
	"io"
	"os"

	"github.com/gpukit/gpukit/pkg/event"
	"golang.org/x/term"
)

// Display consumes a run's events. Emit is safe for concurrent use and never
// blocks for long; Close flushes, restores the terminal, prints the final
// summary (TTY and plain) and returns a write error, if any. Call Close once
// the run has returned, also on error paths.
type Display interface {
	event.Sink
	Close() error
}

// Option configures a display.
type Option func(*options)

type options struct {
	title   string
	cancel  context.CancelFunc
	verbose bool
	input   io.Reader
}

// WithTitle names the command in the header ("gpukit init"); the RunStart
// event's title takes precedence.
func WithTitle(title string) Option { return func(o *options) { o.title = title } }

// WithCancel is called when the operator presses Ctrl-C in the TTY display
// (the terminal is in raw mode there, so no SIGINT reaches the process).
// Without it, the display restores the terminal and then raises SIGINT.
func WithCancel(cancel context.CancelFunc) Option { return func(o *options) { o.cancel = cancel } }

// WithVerbose makes the plain display print step starts, every output line
// and the scripts of planned writes.
func WithVerbose(v bool) Option { return func(o *options) { o.verbose = v } }

// WithInput sets where the TTY display reads keys (default: the terminal).
func WithInput(r io.Reader) Option { return func(o *options) { o.input = r } }

func collect(opts []Option) options {
	var o options
	for _, f := range opts {
		f(&o)
	}
	return o
}

// Choose picks the display for --output format: "json" gives JSON lines;
// "plain" plain lines; anything else the TTY view when out is a terminal
// (and TERM is not "dumb"), plain lines otherwise.
func Choose(out *os.File, format string, opts ...Option) Display {
	switch format {
	case "json":
		return NewJSON(out)
	case "plain":
		return NewPlain(out, opts...)
	}
	if IsTerminal(out) && os.Getenv("TERM") != "dumb" {
		return NewTTY(out, opts...)
	}
	return NewPlain(out, opts...)
}

// IsTerminal reports whether f is a terminal.
func IsTerminal(f *os.File) bool {
	return f != nil && term.IsTerminal(int(f.Fd()))
}
