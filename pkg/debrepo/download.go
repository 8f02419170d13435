package debrepo

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"

	"github.com/gpukit/gpukit/pkg/atomicfile"
)

// Download fetches p's .deb through get to dst, checked against the size
// and SHA256 of p's (verified) index, and replaces dst whole. A dst that
// already holds that file is left as it is, without fetching: a bundle's
// re-run fetches only what changed.
func Download(ctx context.Context, get Getter, p *Package, dst string) error {
	want := fileSum{p.SHA256, p.Size}
	if fi, err := os.Stat(dst); err == nil && fi.Mode().IsRegular() && fi.Size() == p.Size {
		if got, err := sumFile(dst); err == nil && got == want {
			return nil
		}
	}
	u := p.URL()
	b, err := get(ctx, u, max(p.Size, 1))
	if err != nil {
		return fmt.Errorf("%s: %w", u, err)
	}
	sum := sha256.Sum256(b)
	if got := (fileSum{hex.EncodeToString(sum[:]), int64(len(b))}); got != want {
		return fmt.Errorf("%s: %d bytes of SHA256 %s, the index says %d bytes of SHA256 %s", u, got.size, got.sha256, want.size, want.sha256)
	}
	if err := atomicfile.Write(dst, b, 0o644); err != nil {
		return fmt.Errorf("%s: %w", p, err)
	}
	return nil
}
