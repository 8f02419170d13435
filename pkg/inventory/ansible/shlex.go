package ansible

import (
	"errors"
	"strings"
)

// shellSplit splits s into words the way Python's shlex.split does in POSIX
// mode, which is what Ansible uses for INI host lines and for
// ansible_ssh_common_args. With comments, an unquoted '#' ends the line even
// inside a word: Ansible reads "ansible_host=10.0.0.1#x" as 10.0.0.1, and the
// conversion must read it the same way.
func shellSplit(s string, comments bool) ([]string, error) {
	var (
		words   []string
		word    strings.Builder
		inWord  bool // a word has started (an empty "" still makes a word)
		quote   rune // the open quote, 0 outside quotes
		escaped bool
	)
	for _, r := range s {
		switch {
		case escaped:
			// Inside double quotes a backslash escapes only '"' and '\'.
			if quote == '"' && r != '"' && r != '\\' {
				word.WriteRune('\\')
			}
			word.WriteRune(r)
			escaped = false
		case quote == '\'':
			if r == '\'' {
				quote = 0
			} else {
				word.WriteRune(r)
			}
		case quote == '"':
			switch r {
			case '"':
				quote = 0
			case '\\':
				escaped = true
			default:
				word.WriteRune(r)
			}
		case r == '\\':
			escaped, inWord = true, true
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t' || r == '\n' || r == '\r':
			if inWord {
				words = append(words, word.String())
				word.Reset()
				inWord = false
			}
		case r == '#' && comments:
			if inWord {
				words = append(words, word.String())
			}
			return words, nil
		default:
			word.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, errors.New("no closing quotation")
	}
	if escaped {
		return nil, errors.New("no escaped character")
	}
	if inWord {
		words = append(words, word.String())
	}
	return words, nil
}

// pythonLiteral undoes the quoting of a value Ansible passes through
// ast.literal_eval: "'~/.ssh/id_rsa'" is the string ~/.ssh/id_rsa. Anything
// that is not one quoted string literal is kept as written (numbers, booleans
// and lists are read later by the variable that wants them).
func pythonLiteral(s string) string {
	s = strings.TrimSpace(s)
	if len(s) < 2 {
		return s
	}
	q := s[0]
	if (q != '\'' && q != '"') || s[len(s)-1] != q {
		return s
	}
	body := s[1 : len(s)-1]
	var b strings.Builder
	for i := 0; i < len(body); i++ {
		c := body[i]
		if c == byte(q) {
			return s // an unescaped quote inside: not a single literal
		}
		if c != '\\' || i+1 == len(body) {
			b.WriteByte(c)
			continue
		}
		i++
		switch body[i] {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case '\\', '\'', '"':
			b.WriteByte(body[i])
		default:
			b.WriteByte('\\')
			b.WriteByte(body[i])
		}
	}
	return b.String()
}
