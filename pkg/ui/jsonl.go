package ui

import (
	"bufio"
	"encoding/json"
	"io"
	"sync"
	"time"

	"github.com/gpukit/gpukit/pkg/event"
)

// jsonFlushDelay bounds how long an event waits in the buffer: a program
// reading the stream sees each event within it, while a 1000-host run writes
// a few hundred times per second instead of once per output line (a write
// per event was a third of the client's system calls).
const jsonFlushDelay = 50 * time.Millisecond

// JSON writes every event as one JSON object per line (--output json), the
// stable form documented in pkg/event.
type JSON struct {
	mu    sync.Mutex
	w     *bufio.Writer
	enc   *json.Encoder
	timer *time.Timer // pending flush; nil when the buffer is empty
	err   error
}

// NewJSON returns a JSON-lines display writing to w.
func NewJSON(w io.Writer) *JSON {
	bw := bufio.NewWriterSize(w, 64<<10)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false) // scripts and errors hold <, > and & often
	return &JSON{w: bw, enc: enc}
}

// Emit writes e as one line: at once when it ends the run, else within
// jsonFlushDelay.
func (j *JSON) Emit(e event.Event) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.err != nil {
		return
	}
	if j.err = j.enc.Encode(e); j.err != nil {
		return
	}
	if e.Type == event.RunDone {
		j.flushLocked()
		return
	}
	if j.timer == nil {
		j.timer = time.AfterFunc(jsonFlushDelay, j.flush)
	}
}

func (j *JSON) flush() {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.flushLocked()
}

func (j *JSON) flushLocked() {
	if j.timer != nil {
		j.timer.Stop()
		j.timer = nil
	}
	if err := j.w.Flush(); err != nil && j.err == nil {
		j.err = err
	}
}

// Close flushes what is buffered and returns the first write error.
func (j *JSON) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.flushLocked()
	return j.err
}
