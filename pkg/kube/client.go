// Package kube talks to a cluster's API server. It is the one home of the
// way there (API: a Client from the admin kubeconfig gpukit fetched,
// reached through the first control plane's SSH connection - Tunnel - or
// from this machine with a kubeconfig - Local), of the node labels, taints
// and runtime class names the layers share (names.go), of the node changes
// gpukit makes (labels, taints), and of server-side apply of many objects
// in dependency order (Apply: Kubeflow's manifests, charts' CRDs). Helm's
// client (pkg/charts) is made from a Client.
package kube

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	gossh "golang.org/x/crypto/ssh"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// DialFunc opens a TCP connection as seen from a host (engine.Host.Dialer's:
// the same type, so that a host of the run is a Host here).
type DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error)

// Client is one cluster's API as gpukit reaches it.
type Client struct {
	// Config is the client configuration: the dialer (through a control
	// plane's SSH connection, or this machine's), 50 requests a second, no
	// timeout of its own (Helm's waits, server-side apply, exec and drains
	// bound theirs). Clients of other kinds start from it (Helm's,
	// pkg/charts; the upgrade's counted one).
	Config *rest.Config
	// Clientset is a clientset over Config, each request bounded at 30s.
	Clientset kubernetes.Interface
	// Kubeconfig is what the client was made from (a secret): Helm reads
	// its contexts.
	Kubeconfig []byte
}

// NewClient returns the client of the kubeconfig's current context. With
// tunnel set, connections are opened from the control plane through its SSH
// connection, so the API is reached wherever the hosts are (behind a
// bastion, on a network this machine has no route to); where the host's
// sshd forbids TCP forwarding, this machine dials the API itself.
func NewClient(kubeconfig []byte, tunnel DialFunc) (*Client, error) {
	cfg, err := restConfig(kubeconfig, tunnel)
	if err != nil {
		return nil, err
	}
	bounded := rest.CopyConfig(cfg)
	bounded.Timeout = 30 * time.Second
	cs, err := kubernetes.NewForConfig(bounded)
	if err != nil {
		return nil, fmt.Errorf("a client for %s: %w", cfg.Host, err)
	}
	return &Client{Config: cfg, Clientset: cs, Kubeconfig: kubeconfig}, nil
}

// restConfig is the client configuration of the kubeconfig's current
// context, dialled through tunnel.
func restConfig(kubeconfig []byte, tunnel DialFunc) (*rest.Config, error) {
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("the admin kubeconfig: %w", err)
	}
	// A thousand nodes are labelled in one run: client-go's default of 5
	// requests a second would take minutes.
	cfg.QPS, cfg.Burst = 50, 100
	cfg.Dial = dialer(tunnel)
	return cfg, nil
}

func dialer(tunnel DialFunc) DialFunc {
	var direct net.Dialer
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if tunnel != nil {
			c, err := tunnel(ctx, network, addr)
			if err == nil || !forwardingRefused(err) {
				return c, err
			}
		}
		return direct.DialContext(ctx, network, addr)
	}
}

// forwardingRefused: the host's sshd does not allow TCP forwarding
// (AllowTcpForwarding no).
func forwardingRefused(err error) bool {
	var oc *gossh.OpenChannelError
	if errors.As(err, &oc) {
		return oc.Reason == gossh.Prohibited
	}
	return strings.Contains(err.Error(), "administratively prohibited")
}
