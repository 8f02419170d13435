package ui

import (
	"fmt"
	"io"
	"os"

	"github.com/muesli/termenv"
	"golang.org/x/term"
)

// Format is the --output (-o) value of every command: how output is written.
type Format string

const (
	// FormatAuto is the live view on a terminal, plain lines otherwise.
	FormatAuto Format = "auto"
	// FormatPlain is one line per event (and plain reports), never escape codes.
	FormatPlain Format = "plain"
	// FormatJSON is one JSON object per line (events, then the command's result).
	FormatJSON Format = "json"
)

// ParseFormat reads an --output value; "" is FormatAuto.
func ParseFormat(s string) (Format, error) {
	switch f := Format(s); f {
	case "":
		return FormatAuto, nil
	case FormatAuto, FormatPlain, FormatJSON:
		return f, nil
	}
	return "", fmt.Errorf("--output %q: want auto, plain or json", s)
}

// Output is the decision about a command's output, made once: where it
// goes, in which form, whether a terminal gets the live view, and whether
// colours may be used. Displays and reports receive it instead of asking
// the terminal again.
type Output struct {
	W io.Writer
	// Format is FormatPlain or FormatJSON: Decide resolves FormatAuto.
	Format Format
	// Live is set when W is a terminal that gets the bubbletea view.
	Live bool
	// Terminal is set when W is a terminal (a person reads it, whatever
	// the format): what must not reach a log (a generated login) is shown
	// only then.
	Terminal bool
	// Profile is the colours W can show: termenv.Ascii for none (not a
	// terminal, JSON, NO_COLOR).
	Profile termenv.Profile
}

// Color reports whether escape codes for colour may be used.
func (o Output) Color() bool { return o.Profile != termenv.Ascii }

// Decide resolves f for w: the one place that asks whether the output is a
// terminal and reads TERM and NO_COLOR (getenv, os.Getenv in the binary).
// JSON is never coloured; a terminal with TERM=dumb gets plain lines; NO_COLOR
// keeps the live view but drops the colours.
func Decide(w io.Writer, f Format, getenv func(string) string) Output {
	o := Output{W: w, Format: f, Profile: termenv.Ascii, Terminal: isTerminal(w)}
	if f == FormatJSON {
		return o
	}
	tty := isTerminal(w) && getenv("TERM") != "dumb"
	if f == FormatAuto {
		o.Format = FormatPlain
		o.Live = tty
	}
	if tty && getenv("NO_COLOR") == "" {
		o.Profile = termenv.NewOutput(w, termenv.WithEnvironment(envFunc(getenv))).EnvColorProfile()
	}
	return o
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && f != nil && term.IsTerminal(int(f.Fd()))
}

// envFunc lets termenv read the environment Decide was given.
type envFunc func(string) string

func (e envFunc) Environ() []string      { return nil }
func (e envFunc) Getenv(k string) string { return e(k) }
