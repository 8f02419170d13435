package ansible

import (
	"strings"
	"testing"

	"github.com/gpukit/gpukit/pkg/inventory"
)

// hostLine summarises a spec.hosts entry as "name address role,role".
func hostLine(h inventory.Host) string {
	roles := make([]string, len(h.Roles))
	for i, r := range h.Roles {
		roles[i] = string(r)
	}
	return h.Name + " " + h.Address + " " + strings.Join(roles, ",")
}

func hostLines(cl inventory.Cluster) []string {
	out := make([]string, len(cl.Spec.Hosts))
	for i, h := range cl.Spec.Hosts {
		out[i] = hostLine(h)
	}
	return out
}

// mustConvert converts an INI snippet named inventory.ini.
func mustConvert(t *testing.T, in Input) *Result {
	t.Helper()
	if in.Name == "" {
		in.Name = "inventory.ini"
	}
	res, err := Convert(in)
	if err != nil {
		t.Fatalf("Convert: %v", err)
	}
	return res
}

func notesText(res *Result) string {
	var b strings.Builder
	for _, n := range res.Notes {
		b.WriteString(n.String())
		b.WriteString("\n")
	}
	return b.String()
}

// requireNotes fails unless every fragment appears in some note.
func requireNotes(t *testing.T, res *Result, fragments ...string) {
	t.Helper()
	all := notesText(res)
	for _, f := range fragments {
		if !strings.Contains(all, f) {
			t.Errorf("no note contains %q; notes:\n%s", f, all)
		}
	}
}

// forbidNotes fails if any fragment appears in a note.
func forbidNotes(t *testing.T, res *Result, fragments ...string) {
	t.Helper()
	all := notesText(res)
	for _, f := range fragments {
		if strings.Contains(all, f) {
			t.Errorf("a note contains %q; notes:\n%s", f, all)
		}
	}
}

// mustLoad parses rendered output with gpukit's own loader.
func mustLoad(t *testing.T, out []byte) *inventory.Inventory {
	t.Helper()
	inv, err := inventory.Parse("converted.yaml", out)
	if err != nil {
		t.Fatalf("rendered inventory does not load:\n%v\n--- rendered:\n%s", err, out)
	}
	return inv
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
