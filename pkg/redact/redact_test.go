package redact_test

import (
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/gpukit/gpukit/pkg/redact"
)

func TestRedactorEncodings(t *testing.T) {
	t.Parallel()
	const s = "s3cr3t-Canary/42+x"
	r := redact.New("", s)
	for _, form := range []string{
		s,
		base64.StdEncoding.EncodeToString([]byte(s)),
		base64.RawURLEncoding.EncodeToString([]byte(s)),
		hex.EncodeToString([]byte(s)),
		"s3cr3t-Canary%2F42%2Bx",
		// base64 of a longer string holding the secret, at each alignment
		base64.StdEncoding.EncodeToString([]byte("admin:" + s)),
		base64.StdEncoding.EncodeToString([]byte("ab:" + s + "\n")),
		base64.StdEncoding.EncodeToString([]byte("a:" + s + "@host")),
	} {
		got := r.String("before " + form + " after")
		if strings.Contains(got, form) || !strings.Contains(got, redact.Marker) {
			t.Errorf("%q not redacted: %q", form, got)
		}
	}
	if got := r.String("nothing secret here"); got != "nothing secret here" {
		t.Errorf("clean text changed: %q", got)
	}
	var nilRedactor *redact.Redactor
	if nilRedactor.String("x") != "x" {
		t.Error("nil redactor changed text")
	}
	// Longer forms win over shorter secrets that prefix them.
	r2 := redact.New("abcd", "abcdefgh")
	if got := r2.String("abcdefgh!"); got != redact.Marker+"!" {
		t.Errorf("overlap: %q", got)
	}
}

func TestRedactorError(t *testing.T) {
	t.Parallel()
	base := &exitError{"exit status 1: bad token abc.0123456789abcdef"}
	r := redact.New("abc.0123456789abcdef")
	err := r.Error(fmt.Errorf("join: %w", base))
	var xe *exitError
	if strings.Contains(err.Error(), "0123456789abcdef") || !errors.As(err, &xe) {
		t.Errorf("got %v (chain kept: %v)", err, errors.As(err, &xe))
	}
	plain := errors.New("fine")
	if r.Error(plain) != plain || r.Error(nil) != nil {
		t.Error("clean errors should pass through unchanged")
	}
}

type exitError struct{ msg string }

func (e *exitError) Error() string { return e.msg }
