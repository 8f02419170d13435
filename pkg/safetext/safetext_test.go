package safetext

import (
	"strings"
	"testing"
)

// hostile are values an inventory or a host may hold: terminal resets,
// title setters, bells, bidi overrides, forged lines, invalid UTF-8.
var hostile = []string{
	"\x1bc", "\x1b]0;owned\x07", "a\x07b", "x\u202eevil", "\u2066iso\u2069", "line1\nline2", "cr\roverwrite",
	"\xff\xfe", "nul\x00", "del\x7f", "c1\u0085\u009b31m", "zw\u200bj", "ls\u2028ps\u2029", "\ufeffbom",
}

// dangerous reports whether s still holds something a terminal would act on.
func dangerous(s string) bool {
	for _, r := range s {
		if unsafeRune(r) || r == 0xfffd {
			return true
		}
	}
	return !strings.EqualFold(s, strings.ToValidUTF8(s, "?"))
}

func TestNothingDangerousGetsThrough(t *testing.T) {
	t.Parallel()
	for _, h := range hostile {
		for name, f := range map[string]func(string) string{"Quote": Quote, "Name": Name, "Escape": Escape, "Line": Line} {
			got := f("value " + h + " end")
			if dangerous(got) {
				t.Errorf("%s(%q) = %q still holds control characters", name, h, got)
			}
			if name != "Line" && strings.Contains(got, "\n") {
				t.Errorf("%s(%q) spans lines", name, h)
			}
		}
	}
}

func TestQuote(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"gpu-001":                    `"gpu-001"`,
		"":                           `""`,
		"\x1b]0;t\x07":               `"\x1b]0;t\a"`,
		"a\u202eb":                   `"a\u202eb"`,
		"\xff":                       `"\xff"`,
		strings.Repeat("a", MaxEcho): `"` + strings.Repeat("a", MaxEcho) + `"`,
	} {
		if got := Quote(in); got != want {
			t.Errorf("Quote(%q) = %s, want %s", in, got, want)
		}
	}
	long := strings.Repeat("é", 10<<20)
	got := Quote(long)
	if want := `"` + strings.Repeat("é", MaxEcho) + `"... (20971520 bytes)`; got != want {
		t.Errorf("long value: %.100s", got)
	}
}

func TestName(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"gpu-001":               "gpu-001",
		"testdata/x.yaml":       "testdata/x.yaml",
		"has space":             `"has space"`,
		"esc\x1b":               `"esc\x1b"`,
		"":                      `""`,
		`q"uote`:                `"q\"uote"`,
		strings.Repeat("a", 65): `"` + strings.Repeat("a", 64) + `"... (65 bytes)`,
	} {
		if got := Name(in); got != want {
			t.Errorf("Name(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestEscapeKeepsReadableText(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		`spec.hosts[0].name: invalid host name "gpu_1"`: `spec.hosts[0].name: invalid host name "gpu_1"`,
		"Grüße ✓":           "Grüße ✓",
		"two\nlines":        `two\nlines`,
		"bell\a\x1b[31mred": `bell\a\x1b[31mred`,
		"bad \xff byte":     `bad \xff byte`,
		"rlo \u202e":        `rlo \u202e`,
	} {
		if got := Escape(in); got != want {
			t.Errorf("Escape(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestLine(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"  plain  ":                       "plain",
		"\x1b[31mred\x1b[0m":              "red",
		"a\nb":                            "a | b",
		"tab\there":                       "tab here",
		"\x1b]0;title\x07text":            "text",
		"rlo\u202e end":                   "rlo end",
		"Reading package lists... Done\r": "Reading package lists... Done",
	} {
		if got := Line(in); got != want {
			t.Errorf("Line(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestCut(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 5, "short"},
		{"longer", 3, "lon... (6 bytes)"},
		{"ééé", 2, "éé... (6 bytes)"}, // never inside a character
		{"", 0, ""},
	} {
		if got := Cut(tc.in, tc.n); got != tc.want {
			t.Errorf("Cut(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}
