package event

import "sync"

// Chan is a sink backed by a channel, for a consumer running in its own
// goroutine. Emit blocks while the buffer is full: events are never dropped
// silently (JSON output must be complete), so the consumer must keep reading
// until Close.
type Chan struct {
	c    chan Event
	stop chan struct{}
	once sync.Once

	// mu orders Close after every Emit in progress, so that closing c never
	// races with a send on it.
	mu     sync.RWMutex
	closed bool
}

// NewChan returns a channel sink with the given buffer size.
func NewChan(buffer int) *Chan {
	return &Chan{c: make(chan Event, buffer), stop: make(chan struct{})}
}

// Emit sends e, waiting for room. After Close it drops e.
func (s *Chan) Emit(e Event) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return
	}
	select {
	case s.c <- e:
	case <-s.stop:
	}
}

// Events is the channel to read; it is closed by Close once the buffered
// events have been queued.
func (s *Chan) Events() <-chan Event { return s.c }

// Close stops the sink: senders blocked on a full buffer give up, later Emits
// are dropped, and the channel is closed. Buffered events stay readable.
func (s *Chan) Close() {
	s.once.Do(func() {
		close(s.stop)
		s.mu.Lock()
		s.closed = true
		close(s.c)
		s.mu.Unlock()
	})
}
