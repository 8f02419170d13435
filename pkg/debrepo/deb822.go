package debrepo

import (
	"fmt"
	"strings"
)

// paragraph is one deb822 paragraph (a stanza of a Packages index, or a
// Release file). Values are substrings of the text they were read from,
// continuation lines included, so that a 50 MB index costs no copies.
type paragraph struct {
	raw    string            // the paragraph as written, for WriteFlat to re-emit
	fields map[string]string // lower-case name -> value, trimmed
}

// get returns the value of the field name (any case).
func (p paragraph) get(name string) string { return p.fields[strings.ToLower(name)] }

// paragraphs splits text into its paragraphs, keeping the fields keep names
// (lower case; all fields when keep is nil). The hand-written scanner,
// rather than pault.ag/go/debian/control's reader, keeps each paragraph's
// raw text and reads Debian's 60,000-stanza index without a map per field
// it does not use.
func paragraphs(text string, keep map[string]bool) ([]paragraph, error) {
	var out []paragraph
	var cur *paragraph
	start := 0 // offset of the current paragraph's first line
	key := ""  // the field whose continuation lines may follow
	valStart := 0
	flush := func(end int) {
		if cur == nil {
			return
		}
		if key != "" {
			cur.fields[key] = strings.TrimSpace(text[valStart:end])
		}
		cur.raw = strings.TrimRight(text[start:end], "\r\n")
		out = append(out, *cur)
		cur, key = nil, ""
	}
	lineNo := 0
	for off := 0; off < len(text); {
		lineNo++
		end := strings.IndexByte(text[off:], '\n')
		next := len(text)
		if end < 0 {
			end = len(text)
		} else {
			end += off
			next = end + 1
		}
		line := strings.TrimRight(text[off:end], "\r")
		switch {
		case strings.TrimSpace(line) == "":
			flush(off)
		case line[0] == ' ' || line[0] == '\t':
			if cur == nil {
				return nil, fmt.Errorf("line %d: a continuation line outside a field", lineNo)
			}
		default:
			colon := strings.IndexByte(line, ':')
			if colon <= 0 {
				return nil, fmt.Errorf("line %d: %q is not a field", lineNo, truncate(line))
			}
			if cur == nil {
				cur = &paragraph{fields: map[string]string{}}
				start = off
			} else if key != "" {
				cur.fields[key] = strings.TrimSpace(text[valStart:off])
			}
			key = strings.ToLower(line[:colon])
			if keep != nil && !keep[key] {
				key = ""
			}
			valStart = off + colon + 1
		}
		off = next
	}
	flush(len(text))
	return out, nil
}

// truncate shortens s for an error message.
func truncate(s string) string {
	if len(s) > 60 {
		return s[:60] + "..."
	}
	return s
}
