// Package atomicfile replaces files whole: a reader, or the next run after a
// crash, finds the old content or the new, never half of one. gpukit writes
// this way whatever it keeps on the operator's machine (admin kubeconfigs,
// generated logins, the rollout's state, an inventory it records versions
// in).
package atomicfile

import (
	"io"
	"os"
	"path/filepath"
)

// Write replaces path with b, mode mode, through a temporary file in the
// same directory: synced, renamed over path, the directory synced so that
// the rename survives a crash too. The directory must exist.
func Write(path string, b []byte, mode os.FileMode) error {
	return WriteFunc(path, mode, func(w io.Writer) error {
		_, err := w.Write(b)
		return err
	})
}

// WriteFunc is Write of what fill writes: files too big to hold in memory
// (a bundle's archives). The temporary file is ".NAME.*" beside path.
func WriteFunc(path string, mode os.FileMode, fill func(io.Writer) error) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name()) // gone after the rename; a failure's leftover otherwise
	if err := f.Chmod(mode); err != nil {
		f.Close()
		return err
	}
	if err := fill(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return err
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}
