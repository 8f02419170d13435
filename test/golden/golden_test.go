package golden

import (
	"fmt"
	"strings"
	"testing"
)

func TestDiffShowsOnlyTheChange(t *testing.T) {
	want := strings.Repeat("same\n", 50) + "old\n" + strings.Repeat("same\n", 50)
	got := strings.Replace(want, "old", "new", 1)
	d := Diff("testdata/x.golden", want, got)
	for _, line := range []string{"--- testdata/x.golden", "+++ output", "-old", "+new"} {
		if !strings.Contains(d, line+"\n") {
			t.Errorf("diff lacks %q:\n%s", line, d)
		}
	}
	if n := strings.Count(d, "same"); n != 6 {
		t.Errorf("diff shows %d context lines, want 6:\n%s", n, d)
	}
}

// A mismatch fails the test with the diff; a match passes.
func TestAssert(t *testing.T) {
	if Updating() {
		t.Skip("-update rewrites files instead of comparing")
	}
	path := t.TempDir() + "/g.golden"
	*update = true
	Assert(t, path, []byte("a\nb\n"))
	*update = false
	Assert(t, path, []byte("a\nb\n"))
	rec := &recorder{TB: t}
	Assert(rec, path, []byte("a\nc\n"))
	if !rec.failed || !strings.Contains(rec.msg, "-b\n+c\n") {
		t.Errorf("mismatch reported as %q (failed %v)", rec.msg, rec.failed)
	}
}

type recorder struct {
	testing.TB
	failed bool
	msg    string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.failed = true
	r.msg = fmt.Sprintf(format, args...)
}
