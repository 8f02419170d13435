// cp is the `cp -f SRC DST` the flannel chart's install-cni-plugin init
// container runs (upstream's image has busybox): a test build for the lab's
// flannel-cni-plugin image, which has nothing else.
package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

func main() {
	args := os.Args[1:]
	if len(args) > 0 && args[0] == "-f" {
		args = args[1:]
	}
	if len(args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: cp [-f] SRC DST")
		os.Exit(2)
	}
	if err := copyFile(args[0], args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "cp:", err)
		os.Exit(1)
	}
}

// copyFile writes src to a temporary file beside dst and renames it over
// dst, as cp -f replaces a binary that may be running.
func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	st, err := in.Stat()
	if err != nil {
		return err
	}
	if fi, err := os.Stat(dst); err == nil && fi.IsDir() {
		dst = filepath.Join(dst, filepath.Base(src))
	}
	tmp, err := os.CreateTemp(filepath.Dir(dst), ".cp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := io.Copy(tmp, in); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(st.Mode().Perm()); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), dst)
}
