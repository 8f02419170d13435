package kube

import (
	"context"
	"errors"
	"testing"
)

// testHost is a host of the run that cannot dial (a recording executor's).
type testHost struct{}

func (testHost) Name() string     { return "cp-1" }
func (testHost) Dialer() DialFunc { return nil }

const testKubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://127.0.0.1:6443", insecure-skip-tls-verify: true}
users:
- name: u
  user: {token: t}
contexts:
- name: u@c
  context: {cluster: c, user: u}
current-context: u@c
`

// Through a host: nothing before the cluster exists (a dry-run's first
// run), the fetcher's error as it is, then one client for every phase.
func TestTunnel(t *testing.T) {
	ctx, h := context.Background(), testHost{}
	var kc []byte
	var fetchErr error
	tun := &Tunnel{Fetch: func(context.Context, Host) ([]byte, error) { return kc, fetchErr }}
	if c, err := tun.Client(ctx, h); c != nil || err != nil {
		t.Fatalf("before the cluster exists: %v, %v", c, err)
	}
	fetchErr = errors.New("no admin kubeconfig")
	if _, err := tun.Client(ctx, h); !errors.Is(err, fetchErr) {
		t.Fatalf("fetch error: %v", err)
	}
	kc, fetchErr = []byte(testKubeconfig), nil
	c, err := tun.Client(ctx, h)
	if err != nil || c == nil || c.Config.Host != "https://127.0.0.1:6443" || c.Clientset == nil || string(c.Kubeconfig) != testKubeconfig {
		t.Fatalf("client: %+v, %v", c, err)
	}
	if c.Config.Timeout != 0 || c.Config.QPS != 50 {
		t.Errorf("Config: timeout %s, QPS %v: want none (Helm's waits) and 50", c.Config.Timeout, c.Config.QPS)
	}
	if again, _ := tun.Client(ctx, h); again != c {
		t.Error("a second client: the phases share one")
	}
}

func TestLocal(t *testing.T) {
	l := &Local{Kubeconfig: []byte(testKubeconfig)}
	c, err := l.Client(context.Background(), nil)
	if err != nil || c == nil || c.Config.Host != "https://127.0.0.1:6443" {
		t.Fatalf("client: %+v, %v", c, err)
	}
	if again, _ := l.Client(context.Background(), nil); again != c {
		t.Error("a second client")
	}
	if _, err := (&Local{Kubeconfig: []byte("clusters: [oops")}).Client(context.Background(), nil); err == nil {
		t.Error("a bad kubeconfig: no error")
	}
}
