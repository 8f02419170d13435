package download

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
)

// useServer points Transport at s (its certificate trusted) for one test.
func useServer(t *testing.T, s *httptest.Server) {
	t.Helper()
	old := Transport
	Transport = s.Client().Transport
	t.Cleanup(func() { Transport = old })
}

func digest(b string) string {
	h := sha256.Sum256([]byte(b))
	return hex.EncodeToString(h[:])
}

// https only (redirects too), a size bound that fails instead of cutting
// the file, the pinned digest or a refusal naming both.
func TestGet(t *testing.T) {
	const body = "chart archive bytes"
	var plain *httptest.Server
	plain = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte(body)) }))
	defer plain.Close()
	s := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/to-http":
			http.Redirect(w, r, plain.URL+"/a.tgz", http.StatusFound)
		case "/to-https":
			http.Redirect(w, r, "/a.tgz", http.StatusMovedPermanently)
		case "/chunked": // no Content-Length: the bound holds while reading
			w.(http.Flusher).Flush()
			_, _ = w.Write([]byte(body))
		case "/a.tgz":
			_, _ = w.Write([]byte(body))
		default:
			http.NotFound(w, r)
		}
	}))
	defer s.Close()
	useServer(t, s)
	ctx := context.Background()
	tests := []struct {
		name    string
		r       Request
		wantErr string
	}{
		{"https", Request{URL: s.URL + "/a.tgz", Max: 100}, ""},
		{"the pinned digest", Request{URL: s.URL + "/a.tgz", Max: 100, SHA256: strings.ToUpper(digest(body))}, ""},
		{"a redirect within https", Request{URL: s.URL + "/to-https", Max: 100, SHA256: digest(body)}, ""},
		{"another digest", Request{URL: s.URL + "/a.tgz", Max: 100, SHA256: digest("other")}, "sha256 " + digest(body) + ", not the " + digest("other") + " pinned: refused"},
		{"plain http", Request{URL: plain.URL + "/a.tgz", Max: 100}, "only https is fetched"},
		{"a redirect to plain http", Request{URL: s.URL + "/to-http", Max: 100}, "only https is fetched"},
		{"over the bound, announced", Request{URL: s.URL + "/a.tgz", Max: 5}, "19 bytes, over the 5 allowed"},
		{"over the bound, streamed", Request{URL: s.URL + "/chunked", Max: 5}, "over the 5 bytes allowed"},
		{"not there", Request{URL: s.URL + "/b.tgz", Max: 100}, "404 Not Found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := Get(ctx, tt.r)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || string(b) != body {
				t.Fatalf("%q, %v", b, err)
			}
		})
	}

	t.Run("to a file, nothing left behind on a refusal", func(t *testing.T) {
		p, err := ToFile(ctx, Request{URL: s.URL + "/a.tgz", Max: 100, SHA256: digest(body)}, "gpukit-test-*")
		if err != nil {
			t.Fatal(err)
		}
		defer os.Remove(p)
		if b, _ := os.ReadFile(p); string(b) != body {
			t.Errorf("file holds %q", b)
		}
		if err := CheckFile(p, digest(body)); err != nil {
			t.Error(err)
		}
		if err := CheckFile(p, digest("other")); err == nil {
			t.Error("CheckFile passed another digest")
		}
		before, _ := os.ReadDir(os.TempDir())
		if _, err := ToFile(ctx, Request{URL: s.URL + "/a.tgz", Max: 100, SHA256: digest("other")}, "gpukit-test-*"); err == nil {
			t.Fatal("a wrong digest was accepted")
		}
		if after, _ := os.ReadDir(os.TempDir()); len(after) > len(before) {
			t.Errorf("a refused download left a file: %d entries, were %d", len(after), len(before))
		}
	})
}
