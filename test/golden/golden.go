// Package golden compares test output with golden files: one helper for
// every package's golden tests. `go test ./... -update` rewrites the files
// from the current output (review the diff before committing); a mismatch
// prints a unified diff, so a one-line change in a 300-line script shows as
// one line.
package golden

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/pmezard/go-difflib/difflib"
)

var update = flag.Bool("update", false, "rewrite golden files from the current output")

// Updating reports whether -update was given.
func Updating() bool { return *update }

// Assert compares got with the file at path (relative to the test's
// package directory), or writes it under -update, creating directories.
func Assert(t testing.TB, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -run '%s' -update creates it)", err, t.Name())
	}
	if string(got) == string(want) {
		return
	}
	t.Errorf("%s differs from the output (go test -run '%s' -update accepts it if intended):\n%s",
		path, t.Name(), Diff(path, string(want), string(got)))
}

// AssertString is Assert for a string.
func AssertString(t testing.TB, path, got string) {
	t.Helper()
	Assert(t, path, []byte(got))
}

// Diff is a unified diff from want (the golden file) to got.
func Diff(path, want, got string) string {
	d, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: difflib.SplitLines(want), B: difflib.SplitLines(got),
		FromFile: path, ToFile: "output", Context: 3,
	})
	if err != nil {
		return err.Error()
	}
	return d
}
