// Package redact removes secrets (passwords, join tokens, certificate keys)
// from everything gpukit writes: log lines, events, error messages. The
// transport and the engine share it, so there is one marker and one rule.
package redact

import (
	"encoding/base64"
	"encoding/hex"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// Marker replaces every secret in logs, events and error messages.
const Marker = "[REDACTED]"

// Redactor replaces known secrets, and the encodings under which they commonly
// reappear in scripts and output, with Marker. Secrets learned during a run
// (a join token) are added with Add. It is safe for concurrent use.
//
// It cannot find a secret that was transformed in other ways (hashed, split
// across lines, base64 of a longer string at an alignment shorter than a few
// characters), so phases must keep secrets out of output where they can: pass
// them on stdin, and run commands that print them with SecretOutput.
type Redactor struct {
	mu       sync.RWMutex
	secrets  map[string]bool
	replacer *strings.Replacer
}

// New returns a redactor for secrets; empty strings are ignored. Every
// secret counts, however short: a short password is still a password.
func New(secrets ...string) *Redactor {
	r := &Redactor{secrets: map[string]bool{}}
	r.Add(secrets...)
	return r
}

// Add registers more secrets.
func (r *Redactor) Add(secrets ...string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	changed := false
	for _, s := range secrets {
		if s != "" && !r.secrets[s] {
			r.secrets[s] = true
			changed = true
		}
	}
	if !changed {
		return
	}
	seen := map[string]bool{}
	var forms []string
	for s := range r.secrets {
		for _, f := range encodings(s) {
			if f != "" && (f == s || len(f) >= minEncoded) && !seen[f] {
				seen[f] = true
				forms = append(forms, f)
			}
		}
	}
	// strings.Replacer tries its patterns in argument order at each position,
	// so longer forms go first: a secret's base64 must win over a shorter
	// secret that happens to be its prefix.
	sort.Slice(forms, func(i, j int) bool {
		if len(forms[i]) != len(forms[j]) {
			return len(forms[i]) > len(forms[j])
		}
		return forms[i] < forms[j]
	})
	args := make([]string, 0, 2*len(forms))
	for _, f := range forms {
		args = append(args, f, Marker)
	}
	r.replacer = strings.NewReplacer(args...)
}

// String returns s with every secret replaced.
func (r *Redactor) String(s string) string {
	if r == nil || s == "" {
		return s
	}
	r.mu.RLock()
	rep := r.replacer
	r.mu.RUnlock()
	if rep == nil {
		return s
	}
	return rep.Replace(s)
}

// Error returns err with its message redacted, still unwrapping to err; it
// returns err itself when nothing needed replacing.
func (r *Redactor) Error(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if red := r.String(msg); red != msg {
		return &redactedError{msg: red, err: err}
	}
	return err
}

// redactedError carries a message with secrets removed while keeping the
// original chain for errors.Is/As. Code that unwraps to a concrete type (an
// *ssh.ExitError) sees its raw fields and must not print them.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// minEncoded is the shortest encoded form (hex, base64, ...) that is
// redacted: shorter ones ("61" for "a") match ordinary text everywhere. The
// secret itself is always redacted, whatever its length.
const minEncoded = 4

// minEmbeddedBase64 is the shortest run of base64 characters, taken from the
// middle of a longer encoding, that is still specific enough to redact.
const minEmbeddedBase64 = 8

// encodings lists the forms under which s reaches a log: raw, base64 and
// base64url (padded, unpadded, and embedded in a longer encoded string such
// as "user:password"), hex, URL-escaped, inside a single-quoted shell word,
// and inside a JSON or Go string literal.
func encodings(s string) []string {
	b := []byte(s)
	forms := []string{
		s,
		base64.StdEncoding.EncodeToString(b),
		base64.RawStdEncoding.EncodeToString(b),
		base64.URLEncoding.EncodeToString(b),
		base64.RawURLEncoding.EncodeToString(b),
		hex.EncodeToString(b),
		strings.ToUpper(hex.EncodeToString(b)),
		url.QueryEscape(s),
		url.PathEscape(s),
		strings.ReplaceAll(s, "'", `'\''`),
	}
	if q := strconv.Quote(s); len(q) >= 2 {
		forms = append(forms, q[1:len(q)-1])
	}
	for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
		for offset := 0; offset < 3; offset++ {
			forms = append(forms, embeddedBase64(enc, b, offset))
		}
	}
	return forms
}

// embeddedBase64 returns the characters of enc's encoding of s, preceded by
// offset other bytes, that depend only on s's bytes: they appear whenever s
// is encoded inside a longer string at that alignment.
func embeddedBase64(enc *base64.Encoding, s []byte, offset int) string {
	full := enc.EncodeToString(append(make([]byte, offset), s...))
	first := (8*offset + 5) / 6       // first character starting at or after s
	last := (8*(offset+len(s)))/6 - 1 // last character ending inside s
	if last >= len(full) {
		last = len(full) - 1
	}
	if last-first+1 < minEmbeddedBase64 {
		return ""
	}
	return full[first : last+1]
}
