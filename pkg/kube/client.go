// Package kube talks to a cluster's API server: a clientset from the admin
// kubeconfig gpukit fetched, reached through a host's SSH connection, and
// the node changes gpukit makes there (labels, taints), and server-side
// apply of many objects in dependency order (Apply: Kubeflow's manifests,
// charts' CRDs).
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

// DialFunc opens a TCP connection (engine.Host.Dialer's).
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// NewClient returns a clientset for the kubeconfig's current context. With
// tunnel set, connections are opened from the control plane through its SSH
// connection, so the API is reached wherever the hosts are (behind a
// bastion, on a network this machine has no route to); where the host's
// sshd forbids TCP forwarding, this machine dials the API itself.
func NewClient(kubeconfig []byte, tunnel DialFunc) (kubernetes.Interface, error) {
	cfg, err := RESTConfig(kubeconfig, tunnel)
	if err != nil {
		return nil, err
	}
	cfg.Timeout = 30 * time.Second
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("a client for %s: %w", cfg.Host, err)
	}
	return cs, nil
}

// RESTConfig is the client configuration NewClient uses, for other clients
// of the same API (Helm's).
func RESTConfig(kubeconfig []byte, tunnel DialFunc) (*rest.Config, error) {
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
