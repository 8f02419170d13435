package gpusim

import (
	"testing"

	"github.com/gpukit/gpukit/test/fixtures"
)

// FixturesDir is ../shared/fixtures/nvidia-smi (real captures); it skips the
// test when the shared folder is absent.
func FixturesDir(t testing.TB) string { return fixtures.Dir(t, "nvidia-smi") }
