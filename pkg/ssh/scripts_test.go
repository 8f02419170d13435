package ssh

import (
	"testing"

	"github.com/gpukit/gpukit/test/golden"
	"github.com/gpukit/gpukit/test/shellcheck"
)

// The transport's own scripts, as they reach the host: the runner (on the
// command line, comments stripped, so its golden shows what the host gets)
// and the upload installer (on stdin, as install.sh is written).
func TestTransportScripts(t *testing.T) {
	t.Parallel()
	golden.AssertString(t, "testdata/scripts/runner.sh", runner())
	shellcheck.Check(t, "runner", runner())
	shellcheck.Check(t, "install", installScript)
}
