package inventory

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"
)

// scanText refuses bytes that are not text before YAML sees them: invalid
// UTF-8, NUL and other control characters (YAML allows tab, line feed and
// carriage return only). The YAML library reports these without a line, or
// not at all when they sit inside a quoted string; here each is named with
// its line and column.
func scanText(file string, data []byte) *Issue {
	line, col := 1, 1
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		pos := Position{File: file, Line: line, Column: col}
		switch {
		case r == utf8.RuneError && size == 1:
			hint := "save the file as UTF-8"
			if i == 0 && (bytes.HasPrefix(data, []byte{0xff, 0xfe}) || bytes.HasPrefix(data, []byte{0xfe, 0xff})) {
				hint = "the file looks like UTF-16; save it as UTF-8"
			}
			return &Issue{Pos: pos, Message: fmt.Sprintf("invalid UTF-8 (byte 0x%02x); %s", data[i], hint)}
		case r == 0:
			return &Issue{Pos: pos, Message: "NUL byte; an inventory is text (is this a binary file?)"}
		case r == '\n':
			line, col = line+1, 0
		case r == '\t' || r == '\r':
		case r < ' ' || r == 0x7f || (r >= 0x80 && r < 0xa0 && r != 0x85):
			return &Issue{Pos: pos, Message: fmt.Sprintf("control character %U is not allowed in an inventory; "+
				"remove it (a YAML double-quoted string can spell one as an escape, and gpukit then refuses it as a value)", r)}
		}
		col++
		i += size
	}
	return nil
}

// locateSyntaxError improves the position of a YAML syntax error. The YAML
// library reports an indentation mistake at the start of the enclosing block
// (line 7 for a key mis-indented on line 460) and some errors with no line at
// all; this finds the line that is really at fault, or returns line as given.
// The indentation flag says the line was found by its indentation.
func locateSyntaxError(data []byte, msg string, line int) (l, col int, indentation bool) {
	lines := strings.Split(string(data), "\n")
	if strings.HasPrefix(msg, "unknown anchor '") {
		name := strings.TrimSuffix(strings.TrimPrefix(msg, "unknown anchor '"), "' referenced")
		if l, c := findAlias(lines, name); l > 0 {
			return l, c, false
		}
	}
	if l, c := indentBreak(lines, line); l > 0 {
		return l, c, true
	}
	if line == 0 && strings.Contains(msg, "mapping values are not allowed") {
		if l, c := nestedMappingValue(lines); l > 0 {
			return l, c, false
		}
	}
	return line, 0, false
}

// findAlias finds the first use of alias *name.
func findAlias(lines []string, name string) (int, int) {
	re, err := regexp.Compile(`(^|[\s\[{,:])\*` + regexp.QuoteMeta(name) + `($|[\s\]},])`)
	if err != nil {
		return 0, 0
	}
	for i, l := range lines {
		if loc := re.FindStringIndex(l); loc != nil {
			star := strings.IndexByte(l[loc[0]:], '*') + loc[0]
			return i + 1, utf8.RuneCountInString(l[:star]) + 1
		}
	}
	return 0, 0
}

// keyLine matches a block mapping entry: an unquoted or quoted key, a
// colon, then a space or the end of the line.
var keyLine = regexp.MustCompile(`^(?:"[^"]*"|'[^']*'|[^\s#'"\[\]{},&*!|>%@` + "`" + `][^#]*?):(?:\s|$)`)

// indentBreak returns the first line at or after from (1-based), and its
// column, whose indentation breaks the block structure: a key indented
// deeper than a line that opened no block, or a line that goes back to a
// column no enclosing block uses. It follows block mappings and sequences,
// skips comments, block scalars and flow collections, and finds nothing
// (0, 0) in anything it does not understand.
func indentBreak(lines []string, from int) (int, int) {
	var stack []int // columns of the open blocks
	opens := false  // the previous entry ended in ':' (or '- '): a block may follow
	scalarAt := -1  // a block scalar (| or >) belongs to the entry at this column
	flow := 0       // depth of an unfinished flow collection
	for i, raw := range lines {
		text := strings.TrimRight(raw, " \r")
		t := strings.TrimLeft(text, " ")
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		n := len(text) - len(t)
		if scalarAt >= 0 {
			if n > scalarAt {
				continue
			}
			scalarAt = -1
		}
		if flow > 0 {
			flow += flowDepth(t)
			continue
		}
		popped := false
		for len(stack) > 0 && stack[len(stack)-1] > n {
			stack = stack[:len(stack)-1]
			popped = true
		}
		if len(stack) == 0 || stack[len(stack)-1] < n {
			switch {
			case popped && i+1 >= from:
				return i + 1, n + 1 // back to a column no enclosing block uses
			case len(stack) > 0 && !opens && isEntry(t) && i+1 >= from:
				return i + 1, n + 1 // deeper than a line that opened nothing
			case len(stack) > 0 && !opens && !isEntry(t):
				continue // a plain scalar continued on the next line
			}
			stack = append(stack, n)
		}
		// "- " entries: the content after the dash is a block of its own.
		for strings.HasPrefix(t, "- ") || t == "-" {
			rest := strings.TrimLeft(strings.TrimPrefix(t, "-"), " ")
			if rest == "" {
				t = ""
				break
			}
			n += len(t) - len(rest)
			t = rest
			stack = append(stack, n)
		}
		value := ""
		if m := keyLine.FindString(t); m != "" {
			value = strings.TrimSpace(t[len(m):])
		} else {
			value = t
		}
		if i := strings.Index(value, " #"); i >= 0 {
			value = strings.TrimSpace(value[:i])
		}
		opens = t == "" || (keyLine.MatchString(t) && (value == "" || isNodeProperty(value)))
		if strings.HasPrefix(value, "|") || strings.HasPrefix(value, ">") {
			scalarAt = n
		}
		flow = flowDepth(value)
		if flow < 0 {
			flow = 0
		}
	}
	return 0, 0
}

// isEntry reports whether t starts a mapping entry or a sequence item.
func isEntry(t string) bool {
	return strings.HasPrefix(t, "- ") || t == "-" || keyLine.MatchString(t)
}

// isNodeProperty is a value that is only an anchor or a tag: the node
// itself follows on the next lines.
func isNodeProperty(v string) bool {
	for _, f := range strings.Fields(v) {
		if !strings.HasPrefix(f, "&") && !strings.HasPrefix(f, "!") {
			return false
		}
	}
	return true
}

// flowDepth counts the [ and { a line leaves open, outside quotes.
func flowDepth(s string) int {
	depth := 0
	var quote rune
	for _, r := range s {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '"' || r == '\'':
			quote = r
		case r == '#':
			return depth
		case r == '[' || r == '{':
			depth++
		case r == ']' || r == '}':
			depth--
		}
	}
	return depth
}

// nestedMappingValue finds "key: value: more" - a plain value holding
// ": ", which YAML reports without a line.
func nestedMappingValue(lines []string) (int, int) {
	for i, raw := range lines {
		t := strings.TrimLeft(raw, " -")
		m := keyLine.FindString(t)
		if m == "" {
			continue
		}
		value := t[len(m):]
		trimmed := strings.TrimLeft(value, " ")
		if trimmed == "" || strings.ContainsAny(trimmed[:1], `"'[{|>&*!#`) {
			continue
		}
		if j := strings.Index(trimmed, ": "); j >= 0 || strings.HasSuffix(trimmed, ":") {
			return i + 1, len(raw) - len(t) + len(m) + (len(value) - len(trimmed)) + 1
		}
	}
	return 0, 0
}
