package ui

import (
	"encoding/json"
	"io"
	"sync"

	"github.com/gpukit/gpukit/pkg/event"
)

// JSON writes every event as one JSON object per line (--output json), the
// stable form documented in pkg/event.
type JSON struct {
	mu  sync.Mutex
	enc *json.Encoder
	err error
}

// NewJSON returns a JSON-lines display writing to w.
func NewJSON(w io.Writer) *JSON {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false) // scripts and errors hold <, > and & often
	return &JSON{enc: enc}
}

// Emit writes e as one line.
func (j *JSON) Emit(e event.Event) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.err == nil {
		j.err = j.enc.Encode(e)
	}
}

// Close returns the first write error.
func (j *JSON) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.err
}
