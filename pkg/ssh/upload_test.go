package ssh

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestUpload(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		user string
		sudo bool
		opts serverOptions
	}{
		{"root", "root", false, serverOptions{}},
		{"sudo with password", "ops", true, serverOptions{sudoPassword: canarySudo}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			env := newEnv(t, tc.opts)
			env.cfg.User, env.cfg.SudoPassword = tc.user, tc.opts.sudoPassword
			c := dialT(t, env.cfg)
			ctx := context.Background()
			dst := filepath.Join(t.TempDir(), "etc", "gpukit", "conf.d", "node.conf")
			if err := c.Upload(ctx, File{Path: dst, Mode: 0o640, Content: strings.NewReader("first\n"), Sudo: tc.sudo}); err != nil {
				t.Fatal(err)
			}
			checkFile(t, dst, "first\n", 0o640)
			big := make([]byte, 3<<20)
			rand.Read(big)
			if err := c.Upload(ctx, File{Path: dst, Mode: 0o600, Content: bytes.NewReader(big), Sudo: tc.sudo}); err != nil {
				t.Fatal(err)
			}
			checkFile(t, dst, string(big), 0o600)
			// Default mode; special bits.
			other := filepath.Join(filepath.Dir(dst), "tool")
			if err := c.Upload(ctx, File{Path: other, Content: strings.NewReader("x")}); err != nil {
				t.Fatal(err)
			}
			checkFile(t, other, "x", 0o644)
			// No temporary file left at the destination.
			entries, _ := os.ReadDir(filepath.Dir(dst))
			if len(entries) != 2 {
				t.Fatalf("left behind: %v", entries)
			}
		})
	}
}

func TestUploadErrors(t *testing.T) {
	t.Parallel()
	env := newEnv(t, serverOptions{})
	c := dialT(t, env.cfg)
	ctx := context.Background()
	if err := c.Upload(ctx, File{Path: "relative/path", Content: strings.NewReader("x")}); err == nil {
		t.Fatal("relative path accepted")
	}
	dir := t.TempDir()
	err := c.Upload(ctx, File{Path: dir, Content: strings.NewReader("x")})
	var ee *ExitError
	if !errors.As(err, &ee) || !strings.Contains(err.Error(), "is a directory") {
		t.Fatalf("upload over a directory: %v", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := c.Upload(ctx, File{Path: filepath.Join(dir, "f"), Content: strings.NewReader("x")}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled upload: %v", err)
	}
}

func checkFile(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != mode {
		t.Errorf("%s: mode %o, want %o", path, st.Mode().Perm(), mode)
	}
	if got, _ := os.ReadFile(path); string(got) != content {
		t.Errorf("%s: content differs (%d bytes, want %d)", path, len(got), len(content))
	}
}

// Not parallel: no other test's upload is in flight while /tmp is compared.
func TestUploadLeavesNoTemporaryFiles(t *testing.T) {
	env := newEnv(t, serverOptions{})
	c := dialT(t, env.cfg)
	before, _ := filepath.Glob("/tmp/.gpukit-upload-*")
	dst := filepath.Join(t.TempDir(), "f")
	if err := c.Upload(context.Background(), File{Path: dst, Content: strings.NewReader("x")}); err != nil {
		t.Fatal(err)
	}
	// A failing install cleans up too.
	if err := c.Upload(context.Background(), File{Path: "/proc/gpukit/f", Content: strings.NewReader("x")}); err == nil {
		t.Fatal("upload into /proc succeeded")
	}
	after, _ := filepath.Glob("/tmp/.gpukit-upload-*")
	if len(after) != len(before) {
		t.Fatalf("upload directories left behind: %v (before: %v)", after, before)
	}
}
