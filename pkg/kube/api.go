package kube

import (
	"context"
	"sync"
)

// API reaches the cluster's API from a host of the run: through the first
// control plane's SSH connection (Tunnel, with the admin kubeconfig the
// kubeadm layer fetched) or from the machine gpukit runs on with a
// kubeconfig (Local: a cluster gpukit did not build, --kubeconfig). The
// phases that use the API (the kubeadm layer's, the platform's, the
// upgrade's, the DCGM exporters' reading) take one.
type API interface {
	// Client is the cluster's client, made once a run and shared by the
	// phases; nil (no error) in a dry-run before the cluster exists.
	Client(ctx context.Context, h Host) (*Client, error)
}

// Host is the host of the run a phase reaches the API from (an
// *engine.Host): what the API needs of it is its name and a way to dial
// from it (nil when it cannot: a recording executor's). Tunnel.Fetch, which
// reads the kubeconfig there, knows the host's kind.
type Host interface {
	Name() string
	Dialer() DialFunc
}

// Tunnel is the API reached through a host's SSH connection
// (engine.Host.Dialer: the host dials the API server), with the kubeconfig
// Fetch reads from the host. The client is made once, from the first host
// that asks (the first control plane), and shared by every phase of the
// run, so that they share its connections.
type Tunnel struct {
	// Fetch reads the kubeconfig through h, once a run; nil (no error) when
	// there is none yet, in a dry-run before the cluster exists.
	Fetch func(ctx context.Context, h Host) ([]byte, error)

	mu sync.Mutex
	c  *Client
}

func (t *Tunnel) Client(ctx context.Context, h Host) (*Client, error) {
	kc, err := t.Fetch(ctx, h)
	if err != nil || kc == nil {
		return nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.c == nil {
		if t.c, err = NewClient(kc, h.Dialer()); err != nil {
			return nil, err
		}
	}
	return t.c, nil
}

// Local is the API reached from the machine gpukit runs on with a
// kubeconfig (a cluster gpukit did not build: kubeflow deploy and upgrade
// driver --kubeconfig), made once.
type Local struct {
	Kubeconfig []byte

	mu sync.Mutex
	c  *Client
}

func (l *Local) Client(context.Context, Host) (*Client, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.c == nil {
		c, err := NewClient(l.Kubeconfig, nil)
		if err != nil {
			return nil, err
		}
		l.c = c
	}
	return l.c, nil
}

var (
	_ API = (*Tunnel)(nil)
	_ API = (*Local)(nil)
)
