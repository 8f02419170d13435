package kube

import (
	"context"
	"errors"
	"net"
	"testing"

	gossh "golang.org/x/crypto/ssh"
)

// The API is reached through the host's tunnel; where its sshd forbids
// forwarding, directly; any other tunnel error is the answer.
func TestDialer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	refused := &gossh.OpenChannelError{Reason: gossh.Prohibited, Message: "administratively prohibited"}
	broken := errors.New("ssh: dial through cp-1: connection lost")
	var tunnelled int
	for _, tt := range []struct {
		name    string
		tunnel  DialFunc
		wantErr error
		via     int
	}{
		{name: "no tunnel: direct"},
		{name: "through the tunnel", tunnel: func(ctx context.Context, network, addr string) (net.Conn, error) {
			tunnelled++
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		}, via: 1},
		{name: "forwarding refused: direct", tunnel: func(context.Context, string, string) (net.Conn, error) {
			return nil, refused
		}},
		{name: "the tunnel's own error", tunnel: func(context.Context, string, string) (net.Conn, error) {
			return nil, broken
		}, wantErr: broken},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tunnelled = 0
			c, err := dialer(tt.tunnel)(context.Background(), "tcp", ln.Addr().String())
			if !errors.Is(err, tt.wantErr) || tunnelled != tt.via {
				t.Fatalf("err %v (want %v), tunnelled %d", err, tt.wantErr, tunnelled)
			}
			if c != nil {
				c.Close()
			}
		})
	}
}

func TestNewClientRejectsABadKubeconfig(t *testing.T) {
	if _, err := NewClient([]byte("clusters: [oops"), nil); err == nil {
		t.Fatal("no error")
	}
}
