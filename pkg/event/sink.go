package event

import "sync"

// Sink receives events. Emit is called from many goroutines at once (one per
// host in flight) and must be safe for that; it should return quickly, since
// a slow sink slows the run.
type Sink interface {
	Emit(Event)
}

// SinkFunc adapts a function to a Sink. The function must be safe for
// concurrent use.
type SinkFunc func(Event)

// Emit calls f(e).
func (f SinkFunc) Emit(e Event) { f(e) }

// Discard drops every event.
var Discard Sink = SinkFunc(func(Event) {})

// Multi returns a sink that emits to each of sinks in order; nil sinks are
// left out.
func Multi(sinks ...Sink) Sink {
	var list multi
	for _, s := range sinks {
		if s != nil {
			list = append(list, s)
		}
	}
	return list
}

type multi []Sink

func (m multi) Emit(e Event) {
	for _, s := range m {
		s.Emit(e)
	}
}

// Recorder keeps every event, for tests and for commands that report after
// the run (plan).
type Recorder struct {
	mu     sync.Mutex
	events []Event
}

// Emit records e.
func (r *Recorder) Emit(e Event) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

// Events returns a copy of what was recorded, in emit order.
func (r *Recorder) Events() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Event(nil), r.events...)
}

// OfType returns the recorded events of type t, in emit order.
func (r *Recorder) OfType(t Type) []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Event
	for _, e := range r.events {
		if e.Type == t {
			out = append(out, e)
		}
	}
	return out
}
