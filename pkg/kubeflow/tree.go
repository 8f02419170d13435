// Package kubeflow builds and deploys Kubeflow from its kustomize manifests.
// This file and build.go: the manifests of a release (a tarball or a
// directory) read into memory, remote bases resolved from a local bundle,
// built in-process with the kustomize API, and checked.
package kubeflow

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// maxTreeBytes bounds what a manifests tarball may unpack to (Kubeflow's are
// about 30 MB).
const maxTreeBytes = 512 << 20

// LoadTree copies a manifests tree into an in-memory file system below
// root: from a .tar.gz / .tgz archive or a directory. Builds change only
// that copy.
func LoadTree(src, root string) (filesys.FileSystem, error) {
	mem := filesys.MakeFsInMemory()
	return mem, loadTreeInto(mem, src, root)
}

// loadTreeInto copies the tree at src into mem below root.
func loadTreeInto(mem filesys.FileSystem, src, root string) error {
	st, err := os.Stat(src)
	if err != nil {
		return err
	}
	if st.IsDir() {
		err = copyDir(mem, src, root)
	} else {
		err = copyTarGz(mem, src, root, 0)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", src, err)
	}
	return nil
}

func copyDir(mem filesys.FileSystem, src, root string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return writeFile(mem, path.Join(root, filepath.ToSlash(rel)), b)
	})
}

// copyTarGz unpacks an archive below root, dropping its first strip path
// elements; regular files only, no path leaving root.
func copyTarGz(mem filesys.FileSystem, src, root string, strip int) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return err
	}
	tr := tar.NewReader(zr)
	var total int64
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		name := path.Clean("/" + h.Name)
		if strip > 0 {
			parts := strings.SplitN(strings.TrimPrefix(name, "/"), "/", strip+1)
			if len(parts) <= strip {
				continue
			}
			name = "/" + parts[strip]
		}
		if total += h.Size; total > maxTreeBytes {
			return fmt.Errorf("unpacks to more than %d MiB", maxTreeBytes>>20)
		}
		b, err := io.ReadAll(io.LimitReader(tr, h.Size))
		if err != nil {
			return err
		}
		if err := writeFile(mem, path.Join(root, name), b); err != nil {
			return err
		}
	}
}

func writeFile(mem filesys.FileSystem, p string, b []byte) error {
	p = memPath(p)
	if err := mem.MkdirAll(path.Dir(p)); err != nil {
		return err
	}
	return mem.WriteFile(p, b)
}

// memPath is p as the in-memory file system can hold it: it takes only
// [A-Za-z0-9-_.:] in a name, and a bundle laid out by URL has names such
// as lws@v0.7.0. Any other byte becomes _HH_ (its hex), the same wherever
// the path is made.
func memPath(p string) string {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		c := p[i]
		if c == '/' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' || c == ':' {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "_%02x_", c)
	}
	return b.String()
}
