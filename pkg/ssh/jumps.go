package ssh

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
)

// Jumps are the bastion connections of a run, one per bastion, shared by
// the hosts behind it (DialVia): 1000 hosts cost one bastion login. The
// zero value is ready; Close it after the hosts' connections.
type Jumps struct {
	mu      sync.Mutex
	jumps   map[string]*jump
	retired []*jump // replaced once dead, closed with the rest
}

type jump struct {
	ready  chan struct{}
	client *Client
	err    error
}

// Dial returns the connection to bastion b, dialling it once for the hosts
// that ask at the same time: a failed bastion fails them all with the same
// error. A later ask (a host back from its reboot) that finds the
// connection gone, or the dial failed, dials again: the bastion may have
// restarted while the run went on.
func (js *Jumps) Dial(ctx context.Context, b Config) (*Client, error) {
	key := fmt.Sprintf("%s@%s:%d", b.User, b.Address, b.Port)
	js.mu.Lock()
	if js.jumps == nil {
		js.jumps = map[string]*jump{}
	}
	j, found := js.jumps[key]
	if found && j.dead() {
		js.retired = append(js.retired, j)
		found = false
	}
	if !found {
		j = &jump{ready: make(chan struct{})}
		js.jumps[key] = j
	}
	js.mu.Unlock()
	if !found {
		j.client, j.err = Dial(ctx, b)
		close(j.ready)
	}
	select {
	case <-j.ready:
		if j.err != nil {
			return nil, fmt.Errorf("bastion %s: %w", b.Address, j.err)
		}
		return j.client, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// dead says whether j's dial is over and left no live connection.
func (j *jump) dead() bool {
	select {
	case <-j.ready:
		return j.err != nil || !j.client.Alive()
	default:
		return false // still dialling: its waiters share it
	}
}

// Close closes every bastion connection.
func (js *Jumps) Close() {
	js.mu.Lock()
	defer js.mu.Unlock()
	for _, j := range append(slices.Collect(maps.Values(js.jumps)), js.retired...) {
		<-j.ready
		if j.client != nil {
			j.client.Close()
		}
	}
}
