package debrepo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
)

// Getter fetches url whole, failing when it is more than max bytes: the
// caller decides the transport (a proxy, a mirror, a test's files). Its
// errors need not name url; this package's callers wrap them with it.
type Getter func(ctx context.Context, url string, max int64) ([]byte, error)

// Streamer copies url's body to w, failing when it is more than max
// bytes: Getter for files too big to hold in memory (the CUDA toolkit's
// .debs are hundreds of MB each).
type Streamer func(ctx context.Context, url string, w io.Writer, max int64) error

// HTTPGetter fetches over http and https with client (http.DefaultClient
// when nil). Plain http is allowed because apt repositories are signed, not
// served privately: Read and Download check every byte against a
// signature. A response other than 200 fails with its status, and one over
// max fails instead of being cut short.
func HTTPGetter(client *http.Client) Getter {
	stream := HTTPStreamer(client)
	return func(ctx context.Context, rawURL string, max int64) ([]byte, error) {
		var b bytes.Buffer
		if err := stream(ctx, rawURL, &b, max); err != nil {
			return nil, err
		}
		return b.Bytes(), nil
	}
}

// HTTPStreamer is HTTPGetter's transport, streaming.
func HTTPStreamer(client *http.Client) Streamer {
	if client == nil {
		client = http.DefaultClient
	}
	return func(ctx context.Context, rawURL string, w io.Writer, max int64) error {
		if max <= 0 {
			return fmt.Errorf("a bound of %d bytes", max)
		}
		u, err := url.Parse(rawURL)
		if err != nil {
			return err
		}
		if u.Scheme != "http" && u.Scheme != "https" {
			return fmt.Errorf("scheme %q: only http and https", u.Scheme)
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			var ue *url.Error // names the URL, which the caller adds
			if errors.As(err, &ue) {
				err = ue.Err
			}
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("HTTP %s", resp.Status)
		}
		if resp.ContentLength > max {
			return fmt.Errorf("%d bytes, more than the %d allowed", resp.ContentLength, max)
		}
		n, err := io.Copy(w, io.LimitReader(resp.Body, max+1))
		if err != nil {
			return err
		}
		if n > max {
			return fmt.Errorf("more than the %d bytes allowed", max)
		}
		return nil
	}
}
