package gpusim

import (
	"os"
	"path/filepath"
	"testing"
)

// FixturesDir finds ../shared/fixtures/nvidia-smi (beside the checkout) from any package directory
// of the project, or skips the test saying why.
func FixturesDir(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for d := dir; d != "/"; d = filepath.Dir(d) {
		p := filepath.Join(d, "..", "shared", "fixtures", "nvidia-smi")
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			if _, err := os.Stat(p); err != nil {
				t.Skipf("real nvidia-smi captures not found at %s (the shared/ folder beside the checkout)", p)
			}
			return p
		}
	}
	t.Skip("project root (go.mod) not found")
	return ""
}
