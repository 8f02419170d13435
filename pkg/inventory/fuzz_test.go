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
// testdata (a case per defect class: escapes, empty values, duplicates,
// YAML errors, ignored values, non-host addresses, padding) and the
// example. Parse must never panic or hang, and its result must keep its
// contract: either an inventory with machines, or a *ValidationError whose
// every issue and warning is one bounded, printable line naming the file.
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
	long := strings.Repeat("\\e[31m", 2000)
	f.Add([]byte("apiVersion: gpukit.dev/v1alpha1\nkind: Cluster\nmetadata: {name: \"" + long + "\"}\nspec:\n  hosts:\n  - {name: a, address: \"::ffff:10.0.0.1\", roles: [control-plane]}\n  - {name: a, address: 10.0.0.1, roles: [worker]}\n"))
	f.Add([]byte("apiVersion: \"\"\nkind: Cluster\nmetadata: {name: x}\nspec:\n  hosts:\n  - {name: \"\", address: '', roles: [worker]}\n  - {name: \"gpu-[01:100]\", address: \"10.0.0.[1:100]\", roles: [worker]}\n"))
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
			for _, is := range append(verr.Issues, verr.Warnings...) {
				line := is.String()
				if strings.ContainsAny(line, "\n\r") || !strings.HasPrefix(line, "f.yaml") {
					t.Fatalf("malformed issue line %q", line)
				}
				checkPrintable(t, line)
			}
			return
		}
		for _, w := range inv.Warnings {
			checkPrintable(t, w.String())
		}
		if len(inv.Machines) == 0 {
			t.Fatal("valid inventory without machines")
		}
		names := map[string]bool{}
		addrs := map[string]bool{}
		for _, m := range inv.Machines {
			if m.Name == "" || m.Address == "" {
				t.Fatalf("machine with an empty name or address: %+v", m)
			}
			if a := normalAddress(m.Address); addrs[a] {
				t.Fatalf("duplicate address %s in a valid inventory", m.Address)
			} else {
				addrs[a] = true
			}
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
