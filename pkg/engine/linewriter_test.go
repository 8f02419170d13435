package engine

import (
	"strings"
	"testing"
)

func TestLineWriterBoundsLongLines(t *testing.T) {
	t.Parallel()
	var lines []string
	w := &lineWriter{emit: func(l string) { lines = append(lines, l) }}
	big := strings.Repeat("x", maxLineBytes+10)
	_, _ = w.Write([]byte(big))
	_, _ = w.Write([]byte("\n"))
	w.Flush()
	if len(lines) != 1 || len(lines[0]) != len(big) {
		// The whole chunk arrived at once, so it is one line; what matters
		// is that the buffer was emptied rather than grown further.
		t.Fatalf("got %d lines", len(lines))
	}
	if len(w.buf) != 0 {
		t.Errorf("buffer holds %d bytes", len(w.buf))
	}
	lines = nil
	for i := 0; i < maxLineBytes/1024+2; i++ {
		_, _ = w.Write([]byte(strings.Repeat("y", 1024)))
	}
	w.Flush()
	if len(lines) != 2 || len(lines[0]) > maxLineBytes+1024 {
		t.Errorf("a line without newline was not cut: %d lines", len(lines))
	}
}

func TestSafeFileName(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"gpu-001": "gpu-001", "../x": ".._x", "run": "_run", "": "_", "a/b": "a_b"} {
		if got := safeFileName(in); got != want {
			t.Errorf("safeFileName(%q) = %q, want %q", in, got, want)
		}
	}
}
