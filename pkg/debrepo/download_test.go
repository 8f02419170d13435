package debrepo

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDownload(t *testing.T) {
	_, _, pkgs, srv := testRepo(t)
	p := *pkgs[0]
	p.Base, p.Filename = srv.URL, p.DebName()
	fetches := 0
	get := func(ctx context.Context, url string, max int64) ([]byte, error) {
		fetches++
		return HTTPGetter(srv.Client())(ctx, url, max)
	}
	dst := filepath.Join(t.TempDir(), p.DebName())
	for i, want := range []int{1, 1} { // the second finds it there
		if err := Download(context.Background(), get, &p, dst); err != nil || fetches != want {
			t.Fatalf("download %d: %v, %d fetches", i, err, fetches)
		}
	}
	os.WriteFile(dst, []byte("the .deb of hellO"), 0o644) // same size, other bytes
	if err := Download(context.Background(), get, &p, dst); err != nil || fetches != 2 {
		t.Fatalf("%v, %d fetches", err, fetches)
	}
	if b, _ := os.ReadFile(dst); string(b) != "the .deb of hello" {
		t.Errorf("%q", b)
	}

	bad := p
	bad.SHA256 = strings.Repeat("1", 64)
	other := filepath.Join(t.TempDir(), "x.deb")
	err := Download(context.Background(), get, &bad, other)
	if err == nil || !strings.Contains(err.Error(), p.URL()+": 17 bytes of SHA256 "+p.SHA256+", the index says 17 bytes of SHA256 111") {
		t.Errorf("error %v", err)
	}
	if _, err := os.Stat(other); !os.IsNotExist(err) {
		t.Errorf("a refused file was written: %v", err)
	}
	bad = p
	bad.Size = 5
	if err := Download(context.Background(), get, &bad, other); err == nil || !strings.Contains(err.Error(), p.URL()+": 17 bytes, more than the 5 allowed") {
		t.Errorf("error %v", err)
	}
}

func TestHTTPGetter(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ten":
			w.Write([]byte("0123456789"))
		case "/chunked": // no Content-Length: the bound holds on reading
			w.Write([]byte("01234"))
			w.(http.Flusher).Flush()
			w.Write([]byte("56789"))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	get := HTTPGetter(srv.Client())
	for _, tc := range []struct {
		path string
		max  int64
		err  string
	}{
		{"/ten", 10, ""},
		{"/ten", 9, "10 bytes, more than the 9 allowed"},
		{"/chunked", 10, ""},
		{"/chunked", 9, "more than the 9 bytes allowed"},
		{"/missing", 10, "HTTP 404 Not Found"},
		{"/ten", 0, "a bound of 0 bytes"},
	} {
		b, err := get(context.Background(), srv.URL+tc.path, tc.max)
		switch {
		case tc.err == "" && (err != nil || string(b) != "0123456789"):
			t.Errorf("%s: %q %v", tc.path, b, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s max %d: error %v, want %q", tc.path, tc.max, err, tc.err)
		}
	}
	if _, err := get(context.Background(), "ftp://repo.test/x", 10); err == nil || !strings.Contains(err.Error(), `scheme "ftp"`) {
		t.Errorf("ftp: %v", err)
	}
}
