package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpukit/gpukit/test/gpusim/hoststate"
)

func TestRefusesToStartLikeTheRealOne(t *testing.T) {
	root := t.TempDir()
	write := func(p, s string) {
		os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755)
		os.WriteFile(filepath.Join(root, p), []byte(s), 0o644)
	}
	write("/etc/passwd", "root:x:0:0:root:/root:/bin/bash\n")
	h := hoststate.Host{Root: root}
	start := func(args ...string) string {
		var errb bytes.Buffer
		if code := run(h, append([]string{"nvidia-persistenced"}, args...), &errb); code == 0 {
			t.Fatalf("%v started", args)
		}
		return errb.String()
	}
	if out := start("--user", "nvidia-persistenced"); !strings.Contains(out, "Failed to lookup user nvidia-persistenced") {
		t.Errorf("unknown user: %s", out)
	}
	if out := start("--user", "root", "--persistence-mode"); !strings.Contains(out, "not loaded") {
		t.Errorf("no driver: %s", out)
	}
	write(hoststate.LoadedDriverFile, "580.95.05\n")
	dir := filepath.Join(root, "usr/lib/x86_64-linux-gnu/nvidia/current")
	write("usr/lib/x86_64-linux-gnu/nvidia/current/libnvidia-ml.so.590.48.01", "x")
	os.Symlink("libnvidia-ml.so.590.48.01", filepath.Join(dir, "libnvidia-ml.so.1"))
	if out := start("--user", "root"); !strings.Contains(out, "API mismatch") {
		t.Errorf("mismatch: %s", out)
	}
	// its own package's version counts, not the libraries'
	write(hoststate.LoadedDriverFile, "590.48.01\n")
	write(versionFile, "580.95.05\n")
	if out := start("--user", "root"); !strings.Contains(out, "kernel module has version 590.48.01, but this NVIDIA driver component has version 580.95.05") {
		t.Errorf("a daemon of another release: %s", out)
	}
}
