package debrepo

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"

	"github.com/gpukit/gpukit/pkg/atomicfile"
)

// Download fetches p's .deb through get to dst, checked against the size
// and SHA256 of p's (verified) index, and replaces dst whole. A dst that
// already holds that file is left as it is, without fetching: a bundle's
// re-run fetches only what changed.
func Download(ctx context.Context, get Getter, p *Package, dst string) error {
	_, err := DownloadStream(ctx, func(ctx context.Context, url string, w io.Writer, max int64) error {
		b, err := get(ctx, url, max)
		if err == nil {
			_, err = w.Write(b)
		}
		return err
	}, p, dst)
	return err
}

// DownloadStream is Download through a Streamer: the .deb goes to a
// temporary file beside dst as it arrives, hashed on the way, and replaces
// dst only when its size and SHA256 are the index's. It says whether it
// fetched (false: dst held the file already).
func DownloadStream(ctx context.Context, stream Streamer, p *Package, dst string) (bool, error) {
	want := fileSum{p.SHA256, p.Size}
	if fi, err := os.Stat(dst); err == nil && fi.Mode().IsRegular() && fi.Size() == p.Size {
		if got, err := sumFile(dst); err == nil && got == want {
			return false, nil
		}
	}
	u := p.URL()
	err := atomicfile.WriteFunc(dst, 0o644, func(w io.Writer) error {
		h := sha256.New()
		c := &counter{w: io.MultiWriter(w, h)}
		if err := stream(ctx, u, c, max(p.Size, 1)); err != nil {
			return err
		}
		if got := (fileSum{hex.EncodeToString(h.Sum(nil)), c.n}); got != want {
			return fmt.Errorf("%d bytes of SHA256 %s, the index says %d bytes of SHA256 %s", got.size, got.sha256, want.size, want.sha256)
		}
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("%s: %w", u, err)
	}
	return true, nil
}

// counter counts what goes through it.
type counter struct {
	w io.Writer
	n int64
}

func (c *counter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n += int64(n)
	return n, err
}
