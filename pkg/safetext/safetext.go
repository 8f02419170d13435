// Package safetext makes text that gpukit did not write itself safe to
// print: values from an inventory in error messages, warnings and events,
// and lines of host output on a terminal. An inventory (or a host) must not
// be able to move the operator's cursor, set the terminal's title, reorder
// a line with bidi controls, forge extra lines, or flood the screen with a
// 10 MB value. Every such piece of text passes through this package.
package safetext

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"
)

// MaxEcho is how many characters of a value a message shows; longer values
// are cut and say how long they were.
const MaxEcho = 64

// Quote returns s quoted for a message: a double-quoted string in which
// control characters, bidi and other invisible format characters and invalid
// UTF-8 are escaped (\x1b, \u202e, \xff, as Go's %q does), cut after MaxEcho
// characters with the value's full size: "aaaa..." (10485760 bytes).
func Quote(s string) string {
	cut, n := s, utf8.RuneCountInString(s)
	if n > MaxEcho {
		cut = firstRunes(s, MaxEcho)
		return strconv.Quote(cut) + fmt.Sprintf("... (%d bytes)", len(s))
	}
	return strconv.Quote(cut)
}

// Cut returns s, or, when it has more than n characters, its first n and
// its full size: "aaaa... (10485760 bytes)". It escapes nothing.
func Cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return firstRunes(s, n) + fmt.Sprintf("... (%d bytes)", len(s))
}

// Name returns s as it is when it is plain - printable ASCII without spaces,
// quotes or backslashes, at most MaxEcho long (host names, file paths, field
// names nearly always are) - and Quote(s) otherwise, so that the common case
// reads naturally and the odd case is still safe.
func Name(s string) string {
	if s == "" || len(s) > MaxEcho {
		return Quote(s)
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c >= 0x7f || c == '"' || c == '\'' || c == '\\' || c == '`' {
			return Quote(s)
		}
	}
	return s
}

// Escape returns s with every character that could act on a terminal or
// break a line escaped (\n, \x1b, \u202e, \xff) and nothing else changed:
// the last line of defence for a whole message whose parts were quoted
// when it was made.
func Escape(s string) string {
	if plain(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case unsafeRune(r):
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// Line makes one line of host output safe to show on a terminal: escape
// sequences (colours, cursor moves, titles) are removed, line breaks become
// " | ", tabs spaces, and other controls and invisible format characters are
// dropped. Unlike Quote it keeps the text readable as the host printed it.
func Line(s string) string {
	if plainASCII(s) {
		return strings.TrimSpace(s)
	}
	s = ansi.Strip(s)
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		switch {
		case r == '\n':
			b.WriteString(" | ")
		case r == '\t':
			b.WriteByte(' ')
		case r == utf8.RuneError || unsafeRune(r):
			// dropped
		default:
			b.WriteRune(r)
		}
	}
	return strings.TrimSpace(b.String())
}

// unsafeRune is a character that acts on a terminal or on the text around
// it instead of showing: C0 and C1 controls, DEL, and format characters
// (bidi overrides and isolates, zero-width joiners, the BOM).
func unsafeRune(r rune) bool {
	return r < ' ' || r == 0x7f || (r >= 0x80 && r < 0xa0) || unicode.Is(unicode.Cf, r) ||
		r == '\u2028' || r == '\u2029'
}

// plain reports whether s needs no escaping: valid UTF-8 without unsafe
// characters. The common case costs one pass.
func plain(s string) bool {
	if plainASCII(s) {
		return true
	}
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if unsafeRune(r) {
			return false
		}
	}
	return true
}

func plainASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < ' ' || c >= 0x7f {
			return false
		}
	}
	return true
}

func firstRunes(s string, n int) string {
	i := 0
	for k := 0; k < n && i < len(s); k++ {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return s[:i]
}
