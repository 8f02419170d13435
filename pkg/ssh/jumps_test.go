package ssh

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	gossh "golang.org/x/crypto/ssh"
)

// Hosts behind a bastion share one connection to it; when the bastion
// restarts mid-run, the next host to connect (one back from its reboot)
// gets a new connection instead of the dead one, and a bastion that could
// not be reached is tried again.
func TestJumpsDialAgainOnceGone(t *testing.T) {
	t.Parallel()
	key, pub := writeKey(t, "")
	target := startServer(t, serverOptions{authorized: []gossh.PublicKey{pub}})
	bastion := startServer(t, serverOptions{authorized: []gossh.PublicKey{pub}})
	kh := knownHostsFor(t, false, target, bastion)
	b := Config{Name: "jump", Address: bastion.host, Port: bastion.port, KeyFile: key, KnownHostsFile: kh, KeepaliveInterval: -1}
	host := Config{Name: "gpu-2", Address: target.host, Port: target.port, KeyFile: key, KnownHostsFile: kh, KeepaliveInterval: -1}
	ctx := context.Background()
	var js Jumps
	defer js.Close()

	via := func() *Client {
		t.Helper()
		j, err := js.Dial(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		c, err := DialVia(ctx, j, host)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		runT(t, c, Command{Script: "true"})
		return j
	}
	first := via()
	if again := via(); again != first || bastion.logins.Load() != 1 {
		t.Fatalf("a second host: new bastion connection %v, %d logins", again != first, bastion.logins.Load())
	}
	bastion.drop()
	deadline := time.Now().Add(5 * time.Second)
	for first.Alive() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if first.Alive() {
		t.Fatal("the dropped bastion connection still looks alive")
	}
	if next := via(); next == first || bastion.logins.Load() != 2 {
		t.Fatalf("after the restart: same connection %v, %d logins", next == first, bastion.logins.Load())
	}

	// A bastion down when asked fails those hosts; it is asked again later.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := b
	down.Address, down.Port = "127.0.0.1", ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	if _, err := js.Dial(ctx, down); err == nil {
		t.Fatal("an unreachable bastion answered")
	}
	js.mu.Lock()
	j := js.jumps[fmt.Sprintf("%s@%s:%d", down.User, down.Address, down.Port)]
	js.mu.Unlock()
	if j == nil || !j.dead() {
		t.Fatal("the failed dial is not seen as dead, so it would never be tried again")
	}
}
