package scripts

import (
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// rendered lists every script as it is sent to hosts.
func rendered() map[string]string {
	return map[string]string{"probe": Probe()}
}

func TestGolden(t *testing.T) {
	for name, got := range rendered() {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join("testdata", name+".golden.sh")
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("%s differs from %s; review and run go test -update", name, path)
			}
		})
	}
}

func TestShellcheck(t *testing.T) {
	if _, err := exec.LookPath("shellcheck"); err != nil {
		t.Skip("shellcheck not installed (hack/install-deps.sh installs it)")
	}
	for name, script := range rendered() {
		t.Run(name, func(t *testing.T) {
			cmd := exec.Command("shellcheck", "-s", "bash", "-")
			cmd.Stdin = strings.NewReader(script)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("shellcheck %s: %v\n%s", name, err, out)
			}
		})
	}
}

func TestPreludeIsStrict(t *testing.T) {
	for name, script := range rendered() {
		if !strings.HasPrefix(script, "set -euo pipefail\n") {
			t.Errorf("%s does not start with the strict prelude", name)
		}
	}
}
