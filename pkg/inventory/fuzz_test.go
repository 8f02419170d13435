package inventory

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzParse feeds arbitrary bytes to Parse, seeded with every inventory in
// testdata and the example. Parse must never panic or hang, and its result
// must keep its contract: either an inventory or a *ValidationError whose
// every issue is one line and names the file.
func FuzzParse(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/*/*.yaml")
	for _, s := range seeds {
		data, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add(Example())
	f.Add([]byte(inventory200))
	f.Fuzz(func(t *testing.T, data []byte) {
		inv, err := Parse("f.yaml", data)
		if err != nil {
			if inv != nil {
				t.Fatal("inventory and error together")
			}
			var verr *ValidationError
			if !errors.As(err, &verr) || len(verr.Issues) == 0 {
				t.Fatalf("error %T %v is not a ValidationError with issues", err, err)
			}
			for _, is := range verr.Issues {
				line := is.String()
				if strings.ContainsAny(line, "\n\r") || !strings.HasPrefix(line, "f.yaml") {
					t.Fatalf("malformed issue line %q", line)
				}
			}
			return
		}
		if len(inv.Machines) == 0 {
			t.Fatal("valid inventory without machines")
		}
		names := map[string]bool{}
		for _, m := range inv.Machines {
			if names[m.Name] {
				t.Fatalf("duplicate machine %s in a valid inventory", m.Name)
			}
			names[m.Name] = true
			if m.Access.Port == 0 || m.Access.User == "" || m.Access.ConnectTimeout <= 0 || m.Access.KnownHostsFile == "" {
				t.Fatalf("machine %s without effective ssh: %+v", m.Name, m.Access)
			}
			// Whatever reaches a shell is from the explicit sets.
			for _, v := range []string{m.Name, m.Address, m.Access.User} {
				if !utf8.ValidString(v) || strings.ContainsAny(v, "$`;'\"\\ \n|&<>(){}*?!") {
					t.Fatalf("unsafe value %q accepted", v)
				}
			}
		}
	})
}
