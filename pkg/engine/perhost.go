package engine

import "sync"

// PerHost is a layer's share of each host of a run: what its phases learned
// about a host (a decision made once, a state read once and again after a
// change), made empty on first use. The zero value is ready. Any goroutine
// may ask for a host's share; only the one working on that host changes it
// (a host's phases run one after another, phases are separated by waits).
type PerHost[T any] struct {
	mu sync.Mutex
	m  map[string]*T
}

// Of is the share of the host named name.
func (p *PerHost[T]) Of(name string) *T {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil {
		p.m = map[string]*T{}
	}
	v := p.m[name]
	if v == nil {
		v = new(T)
		p.m[name] = v
	}
	return v
}
