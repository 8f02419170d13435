package gpusim

import (
	"testing"

	"github.com/gpukit/gpukit/test/fixtures"
)

// FixturesDir is test/testdata/nvidia-smi: real captures, committed (their
// sources in test/testdata/PROVENANCE.md).
func FixturesDir(t testing.TB) string { return fixtures.Dir(t, "nvidia-smi") }
