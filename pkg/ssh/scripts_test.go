package ssh

import (
	"testing"

	"github.com/gpukit/gpukit/test/golden"
	"github.com/gpukit/gpukit/test/shellcheck"
)

// The transport's own scripts, as they reach the host: the runner (on the
// command line, comments stripped) and the upload installer (on stdin).
func TestTransportScripts(t *testing.T) {
	t.Parallel()
	for name, script := range map[string]string{"runner": runner, "install": installScript} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			golden.AssertString(t, "testdata/scripts/"+name+".sh", script)
			shellcheck.Check(t, name, script)
		})
	}
}
