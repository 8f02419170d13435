package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpukit/gpukit/pkg/kubeflow"
	"github.com/gpukit/gpukit/pkg/ui"
)

// A generated login is shown once on a terminal; plain output that is not
// one (CI logs, | tee) and JSON name the 0600 file, never the password.
func TestWriteCredentials(t *testing.T) {
	creds := []kubeflow.Credential{{What: "Grafana", User: "admin", Password: "canary-Pa55w0rd"}}
	for _, tc := range []struct {
		name     string
		out      ui.Output
		shown    bool
		wantText string
	}{
		{"a terminal", ui.Output{Format: ui.FormatPlain, Terminal: true}, true, "Logins written to "},
		{"plain lines to a file or pipe", ui.Output{Format: ui.FormatPlain}, false, "(mode 0600; shown on a terminal only): Grafana\n"},
		{"JSON", ui.Output{Format: ui.FormatJSON, Terminal: true}, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			tc.out.W = &b
			path := filepath.Join(t.TempDir(), "lab.credentials")
			if err := writeCredentials(tc.out, path, creds); err != nil {
				t.Fatal(err)
			}
			if got := strings.Contains(b.String(), "canary-Pa55w0rd"); got != tc.shown {
				t.Errorf("password shown %v, want %v:\n%s", got, tc.shown, b.String())
			}
			if !strings.Contains(b.String(), tc.wantText) || (tc.wantText == "") != (b.Len() == 0) {
				t.Errorf("output %q, want %q", b.String(), tc.wantText)
			}
			fi, err := os.Stat(path)
			if err != nil || fi.Mode().Perm() != 0o600 {
				t.Fatalf("the file: %v %v", fi, err)
			}
			if f, _ := os.ReadFile(path); !strings.Contains(string(f), "Grafana\tuser admin\tpassword canary-Pa55w0rd") {
				t.Errorf("the file holds %q", f)
			}
		})
	}
}
