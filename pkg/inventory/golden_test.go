package inventory

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/gpukit/gpukit/test/golden"
)

// TestInvalidGolden loads every testdata/invalid/*.yaml and compares the full
// error output, line for line, with its .golden file.
func TestInvalidGolden(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("testdata/invalid/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 20 {
		t.Fatalf("only %d invalid inventories; the suite covers at least 20 defects", len(files))
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".yaml"), func(t *testing.T) {
			t.Parallel()
			inv, err := Load(file)
			if err == nil {
				t.Fatalf("Load(%s) succeeded with %d machines, want errors", file, len(inv.Machines))
			}
			var verr *ValidationError
			if !errors.As(err, &verr) {
				t.Fatalf("Load(%s) error %T is not a *ValidationError: %v", file, err, err)
			}
			if inv != nil {
				t.Error("Load returned an inventory together with an error")
			}
			for _, is := range verr.Issues {
				if !strings.HasPrefix(is.Pos.String(), file) {
					t.Errorf("issue without the file name: %s", is)
				}
				checkPrintable(t, is.String())
			}
			compareGolden(t, strings.TrimSuffix(file, ".yaml")+".golden", err.Error()+"\n")
		})
	}
}

// TestWarningsGolden loads every testdata/warnings/*.yaml: each is valid and
// its warnings match the .golden file.
func TestWarningsGolden(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("testdata/warnings/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".yaml"), func(t *testing.T) {
			t.Parallel()
			inv, err := Load(file)
			if err != nil {
				t.Fatalf("Load(%s): %v", file, err)
			}
			if len(inv.Warnings) == 0 {
				t.Fatal("no warnings")
			}
			var b strings.Builder
			for _, w := range inv.Warnings {
				checkPrintable(t, w.String())
				b.WriteString(w.String() + "\n")
			}
			compareGolden(t, strings.TrimSuffix(file, ".yaml")+".golden", b.String())
		})
	}
}

// TestValidFiles loads every testdata/valid/*.yaml without errors or warnings.
func TestValidFiles(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("testdata/valid/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".yaml"), func(t *testing.T) {
			t.Parallel()
			inv, err := Load(file)
			if err != nil {
				t.Fatalf("Load(%s):\n%v", file, err)
			}
			for _, w := range inv.Warnings {
				t.Errorf("unexpected warning: %s", w)
			}
		})
	}
}

// TestManyDefectsAllReported guards the central promise: one run lists every
// problem, so an operator fixes the file in one pass.
func TestManyDefectsAllReported(t *testing.T) {
	t.Parallel()
	_, err := Load("testdata/invalid/many-defects.yaml")
	var verr *ValidationError
	if !errors.As(err, &verr) {
		t.Fatalf("error %v is not a *ValidationError", err)
	}
	want := []string{
		"apiVersion", "metadata.name", "spec.sshh", "spec.ssh.user", "spec.ssh.port",
		"spec.ssh.connectTimeout", "spec.ssh.password", "spec.ssh.password.value",
		"spec.hosts[0].roles[1]", "spec.hosts[0].taints[0]", "spec.hosts[1].address",
		"spec.hosts[2].address", `spec.hosts[2].labels["bad key!"]`, "spec.hosts[3].roles",
		"spec.hosts[3].ssh.port", "spec.versions.cuda", "spec.versions.kubernetes",
		"spec.versions.containerRuntime", "spec.network.serviceCIDR", "spec.addons.storage.type",
		"spec.kubeflow.version", "spec.mirrors.nvidia",
	}
	got := map[string]bool{}
	for _, is := range verr.Issues {
		got[is.Path] = true
	}
	for _, p := range want {
		if !got[p] {
			t.Errorf("no issue reported for %s", p)
		}
	}
	if len(verr.Issues) < len(want) {
		t.Errorf("%d issues, want at least %d", len(verr.Issues), len(want))
	}
	if n := strings.Count(err.Error(), "\n") + 1; n != len(verr.Issues) {
		t.Errorf("Error() has %d lines for %d issues", n, len(verr.Issues))
	}
}

func compareGolden(t *testing.T, path, got string) {
	t.Helper()
	golden.AssertString(t, path, got)
}

// maxIssueLine bounds one message: every echoed value is capped, so a
// message is the text around at most a few of them.
const maxIssueLine = 1000

// checkPrintable fails when a message could act on a terminal (control,
// bidi or invalid bytes) or floods it.
func checkPrintable(t *testing.T, line string) {
	t.Helper()
	if !utf8.ValidString(line) {
		t.Errorf("invalid UTF-8 in %q", line)
	}
	for _, r := range line {
		if r < ' ' || r == 0x7f || (r >= 0x80 && r < 0xa0) || unicode.Is(unicode.Cf, r) {
			t.Errorf("raw %U in message %q", r, line)
			return
		}
	}
	if len(line) > maxIssueLine {
		t.Errorf("message of %d bytes: %.200s...", len(line), line)
	}
}
