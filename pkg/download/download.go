// Package download fetches what gpukit installs from the machine it runs on:
// chart archives and their repositories' indexes, Kubeflow's manifests. It
// runs as the cluster's admin, so what it fetches goes over https only
// (every redirect too), stops loudly at a size bound instead of cutting the
// file short, and matches the sha256 the bill of materials (or the site)
// pins when one is pinned.
package download

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
)

// Request is one file to fetch.
type Request struct {
	URL string
	// Max bounds its size in bytes.
	Max int64
	// SHA256 is its digest in hex; "" checks none.
	SHA256 string
}

// Transport carries the requests: the system's roots by default; a test
// points it at its own TLS server.
var Transport http.RoundTripper = http.DefaultTransport

// noPlainRedirect refuses to leave https.
func noPlainRedirect(req *http.Request, via []*http.Request) error {
	if req.URL.Scheme != "https" {
		return fmt.Errorf("redirected to %s: only https is fetched", req.URL.Redacted())
	}
	if len(via) >= 10 {
		return errors.New("more than 10 redirects")
	}
	return nil
}

// Get fetches r into memory.
func Get(ctx context.Context, r Request) ([]byte, error) {
	var b bytes.Buffer
	if err := fetch(ctx, r, &b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// ToFile fetches r into a new temporary file (os.CreateTemp's pattern) and
// returns its path; nothing is left behind on an error.
func ToFile(ctx context.Context, r Request, pattern string) (string, error) {
	f, err := os.CreateTemp("", pattern)
	if err != nil {
		return "", err
	}
	err = fetch(ctx, r, f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

func fetch(ctx context.Context, r Request, w io.Writer) error {
	u, err := url.Parse(r.URL)
	if err != nil {
		return err
	}
	if u.Scheme != "https" {
		return fmt.Errorf("%s: only https is fetched", u.Redacted())
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.URL, nil)
	if err != nil {
		return err
	}
	resp, err := (&http.Client{Transport: Transport, CheckRedirect: noPlainRedirect}).Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", u.Redacted(), resp.Status)
	}
	if resp.ContentLength > r.Max {
		return fmt.Errorf("GET %s: %d bytes, over the %d allowed", u.Redacted(), resp.ContentLength, r.Max)
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(w, h), io.LimitReader(resp.Body, r.Max+1))
	if err != nil {
		return fmt.Errorf("GET %s: %w", u.Redacted(), err)
	}
	if n > r.Max {
		return fmt.Errorf("GET %s: over the %d bytes allowed", u.Redacted(), r.Max)
	}
	return Check(h, r.SHA256, u.Redacted())
}

// Check compares the digest h computed with want ("": none to compare).
func Check(h hash.Hash, want, what string) error {
	if want == "" {
		return nil
	}
	if got := hex.EncodeToString(h.Sum(nil)); !strings.EqualFold(got, want) {
		return fmt.Errorf("%s: sha256 %s, not the %s pinned: refused", what, got, want)
	}
	return nil
}

// CheckFile compares the digest of the file at path with want.
func CheckFile(path, want string) error {
	if want == "" {
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return err
	}
	return Check(h, want, path)
}
