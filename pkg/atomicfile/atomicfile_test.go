package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "admin.kubeconfig")
	for _, tc := range []struct {
		content string
		mode    os.FileMode
	}{{"first", 0o600}, {"second, longer than the first", 0o644}, {"", 0o600}} {
		if err := Write(path, []byte(tc.content), tc.mode); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(path)
		fi, _ := os.Stat(path)
		if err != nil || string(b) != tc.content || fi.Mode().Perm() != tc.mode {
			t.Fatalf("%q %v %v, want %q %v", b, err, fi.Mode().Perm(), tc.content, tc.mode)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("temporary files left: %v", entries)
	}
	if err := Write(filepath.Join(dir, "missing", "f"), []byte("x"), 0o600); err == nil {
		t.Error("a missing directory is not an error")
	}
}
