package enginetest

import (
	"context"
	"fmt"
	"sync"

	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/inventory"
)

// Fleet is a set of fake hosts: its Dial is an engine.Dialer that hands out
// one recording Executor per host and can fail chosen hosts.
type Fleet struct {
	// Handler answers the commands of every host.
	Handler Handler
	// DialErr fails the dial of the named hosts.
	DialErr map[string]error
	// BeforeDial, when set, runs inside each dial (to block or count).
	BeforeDial func(ctx context.Context, host string) error

	// Running measures commands in flight across the fleet; Dialing
	// measures dials in flight.
	Running, Dialing Gauge

	mu    sync.Mutex
	execs map[string]*Executor
	dials map[string]int
}

// Dial implements engine.Dialer.
func (f *Fleet) Dial(ctx context.Context, m inventory.Machine) (engine.Executor, error) {
	f.Dialing.enter()
	defer f.Dialing.leave()
	f.mu.Lock()
	if f.dials == nil {
		f.dials = map[string]int{}
		f.execs = map[string]*Executor{}
	}
	f.dials[m.Name]++
	f.mu.Unlock()
	if f.BeforeDial != nil {
		if err := f.BeforeDial(ctx, m.Name); err != nil {
			return nil, err
		}
	}
	if err := f.DialErr[m.Name]; err != nil {
		return nil, err
	}
	e := NewExecutor(m.Name, f.Handler)
	e.gauge = &f.Running
	f.mu.Lock()
	f.execs[m.Name] = e
	f.mu.Unlock()
	return e, nil
}

// Executor returns the executor handed out for host, or nil.
func (f *Fleet) Executor(host string) *Executor {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.execs[host]
}

// Executors returns every executor handed out, by host.
func (f *Fleet) Executors() map[string]*Executor {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[string]*Executor, len(f.execs))
	for k, v := range f.execs {
		out[k] = v
	}
	return out
}

// Dials returns how many times host was dialled.
func (f *Fleet) Dials(host string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.dials[host]
}

// Gauge counts operations in flight and remembers the most at once.
type Gauge struct {
	mu       sync.Mutex
	now, max int
	changed  chan struct{}
}

func (g *Gauge) enter() {
	g.mu.Lock()
	g.now++
	if g.now > g.max {
		g.max = g.now
	}
	g.notifyLocked()
	g.mu.Unlock()
}

func (g *Gauge) leave() {
	g.mu.Lock()
	g.now--
	g.notifyLocked()
	g.mu.Unlock()
}

func (g *Gauge) notifyLocked() {
	if g.changed != nil {
		close(g.changed)
		g.changed = nil
	}
}

// Now is the count in flight.
func (g *Gauge) Now() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.now
}

// Max is the most ever in flight at once.
func (g *Gauge) Max() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.max
}

// WaitFor blocks until at least n are in flight, or ctx is done; it lets a
// test hold operations until the runner has started as many as it will.
func (g *Gauge) WaitFor(ctx context.Context, n int) bool {
	for {
		g.mu.Lock()
		if g.now >= n {
			g.mu.Unlock()
			return true
		}
		if g.changed == nil {
			g.changed = make(chan struct{})
		}
		ch := g.changed
		g.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return false
		}
	}
}

// Machines returns the named machines, with addresses from 10.0.0.1 on and
// the worker role.
func Machines(names ...string) []inventory.Machine {
	out := make([]inventory.Machine, len(names))
	for i, n := range names {
		out[i] = inventory.Machine{
			Name:    n,
			Address: fmt.Sprintf("10.0.%d.%d", (i+1)/250, (i+1)%250),
			Roles:   []inventory.Role{inventory.RoleWorker},
		}
	}
	return out
}

// Hosts returns n machines named gpu-001, gpu-002, ...
func Hosts(n int) []inventory.Machine {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("gpu-%03d", i+1)
	}
	return Machines(names...)
}
