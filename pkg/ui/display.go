// Package ui shows a run's event stream to a person or a program: a live
// bubbletea view on a terminal, one plain line per event otherwise, or one
// JSON object per line for machines. It depends only on pkg/event, so the
// engine never knows how it is displayed.
package ui

import (
	"context"

	"github.com/gpukit/gpukit/pkg/event"
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

func collect(opts []Option) options {
	var o options
	for _, f := range opts {
		f(&o)
	}
	return o
}

// New returns the display o was decided for: JSON lines, the live view on
// a terminal, or plain lines.
func New(o Output, opts ...Option) Display {
	switch {
	case o.Format == FormatJSON:
		return NewJSON(o.W)
	case o.Live:
		return NewTTY(o.W, o.Profile, opts...)
	}
	return NewPlain(o.W, opts...)
}
