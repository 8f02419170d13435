package engine

import (
	"context"
	"sync"
)

// connections holds the one executor per host of a run, so that they can be
// closed together: at the end of the run, or early when a cancelled run's
// steps do not return by themselves.
type connections struct {
	mu     sync.Mutex
	execs  map[int]Executor
	closed bool
	once   sync.Once
	limit  int
	onErr  func(i int, err error)
}

func newConnections(limit int, onErr func(i int, err error)) *connections {
	return &connections{execs: map[int]Executor{}, limit: limit, onErr: onErr}
}

// add registers host i's executor, replacing the one before it (Reconnect
// closed that already). It reports false once the connections are closed;
// the caller then closes e itself.
func (c *connections) add(i int, e Executor) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	c.execs[i] = e
	return true
}

// drop forgets host i's executor, which its host closed (Reconnect).
func (c *connections) drop(i int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.execs, i)
}

// closeAll closes every executor, in parallel since closing a connection to a
// dead host can take a while. Concurrent callers wait for the first.
func (c *connections) closeAll() {
	c.once.Do(func() {
		c.mu.Lock()
		c.closed = true
		idx := make([]int, 0, len(c.execs))
		for i := range c.execs {
			idx = append(idx, i)
		}
		c.mu.Unlock()
		forEach(context.Background(), c.limit, len(idx), func(k int) {
			if err := c.execs[idx[k]].Close(); err != nil && c.onErr != nil {
				c.onErr(idx[k], err)
			}
		})
	})
}
