package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// ingress reaches host's routes through the Traefik listening on addr, as a
// browser on the lab's bridge would with nip.io resolving host to addr,
// trusting only the PEM certificate certPEM (gpukit's for the domain).
type ingress struct {
	addr, host string
	roots      *x509.CertPool
}

func newIngress(addr, host string, certPEM []byte) ingress {
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(certPEM)
	return ingress{addr: addr, host: host, roots: roots}
}

// get fetches path over scheme (http or https) with the basic login (user
// "": none), following no redirect. A 404 is asked again for up to a
// minute and a half: Traefik learns a route from its provider's next
// look (the API's watch, the swarm's 15 s refresh).
func (in ingress) get(t *testing.T, scheme, path, user, password string) (*http.Response, string) {
	t.Helper()
	port := map[string]string{"http": "80", "https": "443"}[scheme]
	c := &http.Client{Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Transport: &http.Transport{
			DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
				return (&net.Dialer{}).DialContext(ctx, network, net.JoinHostPort(in.addr, port))
			},
			TLSClientConfig: &tls.Config{RootCAs: in.roots, ServerName: in.host},
		}}
	url := scheme + "://" + in.host + path
	var resp *http.Response
	var err error
	for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(2 * time.Second) {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
		if user != "" {
			req.SetBasicAuth(user, password)
		}
		if resp, err = c.Do(req); err == nil && resp.StatusCode != http.StatusNotFound || time.Now().After(deadline) {
			break
		}
		if err == nil {
			resp.Body.Close()
		}
	}
	if err != nil {
		t.Fatalf("GET %s through %s: %v", url, in.addr, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}
