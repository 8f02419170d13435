package enginetest

import (
	"sync"

	"github.com/gpukit/gpukit/pkg/event"
)

// Recorder is a sink that keeps every event, for tests.
type Recorder struct {
	mu     sync.Mutex
	events []event.Event
}

// Emit records e.
func (r *Recorder) Emit(e event.Event) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

// Events returns a copy of what was recorded, in emit order.
func (r *Recorder) Events() []event.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]event.Event(nil), r.events...)
}

// OfType returns the recorded events of type t, in emit order.
func (r *Recorder) OfType(t event.Type) []event.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []event.Event
	for _, e := range r.events {
		if e.Type == t {
			out = append(out, e)
		}
	}
	return out
}
