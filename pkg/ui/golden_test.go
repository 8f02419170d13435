package ui

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpukit/gpukit/pkg/event"
	"github.com/gpukit/gpukit/test/golden"
)

// recorded reads a recorded event stream (one JSON event per line).
func recorded(t *testing.T, name string) []event.Event {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []event.Event
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var e event.Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out = append(out, e)
	}
	return out
}

func TestGolden(t *testing.T) {
	for _, tc := range []struct {
		golden, stream string
		display        func(*bytes.Buffer) Display
	}{
		{"run.plain.golden", "run.jsonl", func(b *bytes.Buffer) Display { return NewPlain(b) }},
		{"run.plain-verbose.golden", "run.jsonl", func(b *bytes.Buffer) Display { return NewPlain(b, WithVerbose(true)) }},
		{"run.json.golden", "run.jsonl", func(b *bytes.Buffer) Display { return NewJSON(b) }},
		{"dryrun.plain.golden", "dryrun.jsonl", func(b *bytes.Buffer) Display { return NewPlain(b) }},
		{"dryrun.plain-verbose.golden", "dryrun.jsonl", func(b *bytes.Buffer) Display { return NewPlain(b, WithVerbose(true)) }},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			var buf bytes.Buffer
			d := tc.display(&buf)
			for _, e := range recorded(t, tc.stream) {
				d.Emit(e)
			}
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
			if bytes.ContainsRune(buf.Bytes(), '\x1b') {
				t.Error("escape codes in non-TTY output")
			}
			golden.Assert(t, filepath.Join("testdata", tc.golden), buf.Bytes())
		})
	}
}

// The JSON display writes exactly one decodable event per line, losslessly.
func TestJSONOneEventPerLine(t *testing.T) {
	t.Parallel()
	events := recorded(t, "run.jsonl")
	var buf bytes.Buffer
	d := NewJSON(&buf)
	for _, e := range events {
		d.Emit(e)
	}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != len(events) {
		t.Fatalf("%d lines for %d events", len(lines), len(events))
	}
	for i, l := range lines {
		var e event.Event
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		if a, b := mustJSON(t, e), mustJSON(t, events[i]); a != b {
			t.Errorf("line %d changed:\n%s\n%s", i+1, a, b)
		}
	}
}

func mustJSON(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A run that ends without RunDone (the CLI failed, or the engine panicked)
// still gets a summary from Close.
func TestPlainSummaryWithoutRunDone(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	d := NewPlain(&buf, WithTitle("gpukit init"))
	for _, e := range recorded(t, "run.jsonl")[:9] {
		d.Emit(e)
	}
	_ = d.Close()
	if !strings.Contains(buf.String(), "gpukit init failed: 2 ok, 1 failed") {
		t.Errorf("no summary:\n%s", buf.String())
	}
	// And a display that saw nothing prints nothing.
	var empty bytes.Buffer
	_ = NewPlain(&empty).Close()
	if empty.Len() != 0 {
		t.Errorf("empty run printed %q", empty.String())
	}
}

// The output is decided once: JSON stays JSON, a file gets plain lines and
// no colour, whatever TERM and NO_COLOR say; New builds what was decided.
func TestDecide(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	env := func(k string) string { return map[string]string{"TERM": "xterm-256color"}[k] }
	for _, tc := range []struct {
		w      io.Writer
		format Format
		want   Format
	}{
		{f, FormatJSON, FormatJSON}, {f, FormatAuto, FormatPlain}, {f, FormatPlain, FormatPlain}, {&bytes.Buffer{}, FormatAuto, FormatPlain},
	} {
		o := Decide(tc.w, tc.format, env)
		if o.Format != tc.want || o.Live || o.Color() {
			t.Errorf("%s to %T: %+v", tc.format, tc.w, o)
		}
	}
	if _, ok := New(Decide(f, FormatJSON, env)).(*JSON); !ok {
		t.Error("json format is not the JSON display")
	}
	if _, ok := New(Decide(f, FormatAuto, env)).(*Plain); !ok {
		t.Error("a file is not shown plain")
	}
	for _, bad := range []string{"yaml", "text", "JSON"} {
		if _, err := ParseFormat(bad); err == nil || !strings.Contains(err.Error(), "want auto, plain or json") {
			t.Errorf("%q: %v", bad, err)
		}
	}
	if f, err := ParseFormat(""); err != nil || f != FormatAuto {
		t.Errorf("empty format: %v %v", f, err)
	}
}

// Events are buffered, but a reader sees each one soon: at run_done at once,
// otherwise within the flush delay, and on Close.
func TestJSONFlushes(t *testing.T) {
	t.Parallel()
	var w lockedBuffer
	d := NewJSON(&w)
	d.Emit(event.Event{Type: event.Output, Host: "gpu-1", Line: "hello"})
	deadline := time.Now().Add(10 * time.Second) // far above the delay: a hang, not a speed bound
	for !strings.Contains(w.String(), `"hello"`) {
		if time.Now().After(deadline) {
			t.Fatal("an event stayed in the buffer")
		}
		time.Sleep(5 * time.Millisecond)
	}
	d.Emit(event.Event{Type: event.RunDone, Status: event.StatusOK})
	if !strings.Contains(w.String(), `"run_done"`) {
		t.Fatal("run_done was not written at once")
	}
	d.Emit(event.Event{Type: event.Output, Host: "gpu-1", Line: "late"})
	if err := d.Close(); err != nil || !strings.Contains(w.String(), `"late"`) {
		t.Fatalf("Close did not flush: %v %q", err, w.String())
	}
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
