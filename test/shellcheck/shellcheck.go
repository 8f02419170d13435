// Package shellcheck checks the scripts gpukit sends to hosts: `bash -n`
// (they parse) and shellcheck (they are free of the usual shell bugs). One
// helper for the scripts of every package (pkg/scripts, pkg/ssh).
package shellcheck

import (
	"os/exec"
	"strings"
	"testing"
)

// Check fails t when script does not parse or shellcheck finds anything.
// Without shellcheck installed (hack/install-deps.sh installs it) only the
// parse check runs, and the test says so.
func Check(t testing.TB, name, script string) {
	t.Helper()
	parse := exec.Command("bash", "-n")
	parse.Stdin = strings.NewReader(script)
	if out, err := parse.CombinedOutput(); err != nil {
		t.Errorf("bash -n %s: %v\n%s", name, err, out)
	}
	if _, err := exec.LookPath("shellcheck"); err != nil {
		t.Logf("shellcheck not installed (hack/install-deps.sh installs it): %s only parsed", name)
		return
	}
	sc := exec.Command("shellcheck", "-s", "bash", "-")
	sc.Stdin = strings.NewReader(script)
	if out, err := sc.CombinedOutput(); err != nil {
		t.Errorf("shellcheck %s: %v\n%s", name, err, out)
	}
}
