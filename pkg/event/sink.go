package event

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
