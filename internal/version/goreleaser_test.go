package version

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// goreleaser's own module is not a dependency of gpukit, so `goreleaser
// check` cannot run in the tests; this checks the parts of .goreleaser.yaml
// that a release depends on and that a typo would break silently: the
// linker flags that name this package's variables, and the checksum,
// SBOM and signature the README's install section tells operators to verify.

// releaseConfig is the subset of goreleaser v2's configuration read here
// (field names from goreleaser's pkg/config/config.go).
type releaseConfig struct {
	Version int `yaml:"version"`
	Builds  []struct {
		ID      string   `yaml:"id"`
		Ldflags []string `yaml:"ldflags"`
	} `yaml:"builds"`
	Archives []struct {
		ID           string `yaml:"id"`
		NameTemplate string `yaml:"name_template"`
	} `yaml:"archives"`
	Checksum struct {
		NameTemplate string `yaml:"name_template"`
		Algorithm    string `yaml:"algorithm"`
		Disable      bool   `yaml:"disable"`
	} `yaml:"checksum"`
	SBOMs []map[string]any `yaml:"sboms"`
	Signs []map[string]any `yaml:"signs"`
}

// The keys goreleaser v2 accepts in an sboms and a signs entry (its SBOM and
// Sign structs); goreleaser refuses any other, so a misspelt key here would
// only show at release time.
var (
	sbomKeys = []string{"id", "cmd", "env", "args", "documents", "artifacts", "ids", "disable"}
	signKeys = []string{"id", "cmd", "args", "signature", "artifacts", "ids", "stdin", "stdin_file", "env", "certificate", "output"}
)

func readReleaseConfig(t *testing.T) releaseConfig {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", ".goreleaser.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg releaseConfig
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		t.Fatalf(".goreleaser.yaml: %v", err)
	}
	return cfg
}

// modulePath is the module line of go.mod: the -X flags must name the
// package by its import path.
func modulePath(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if m, ok := strings.CutPrefix(strings.TrimSpace(line), "module "); ok {
			return strings.Trim(strings.TrimSpace(m), `"`)
		}
	}
	t.Fatal("go.mod has no module line")
	return ""
}

// linkableVars lists the package-level string variables of this package's
// non-test files that the linker's -X can set: declared without a value or
// with a constant one (-X skips a variable initialised by a function call).
func linkableVars(t *testing.T) map[string]bool {
	t.Helper()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var decls []*ast.GenDecl
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			if gd, ok := d.(*ast.GenDecl); ok {
				decls = append(decls, gd)
			}
		}
	}
	consts := map[string]bool{}
	for _, gd := range decls {
		if gd.Tok == token.CONST {
			for _, s := range gd.Specs {
				for _, n := range s.(*ast.ValueSpec).Names {
					consts[n.Name] = true
				}
			}
		}
	}
	out := map[string]bool{}
	for _, gd := range decls {
		if gd.Tok != token.VAR {
			continue
		}
		for _, s := range gd.Specs {
			vs := s.(*ast.ValueSpec)
			if vs.Type != nil && !isIdent(vs.Type, "string") {
				continue
			}
			for i, n := range vs.Names {
				switch {
				case len(vs.Values) == 0:
					out[n.Name] = vs.Type != nil
				case i < len(vs.Values):
					out[n.Name] = isConstString(vs.Values[i], consts)
				}
			}
		}
	}
	return out
}

func isIdent(e ast.Expr, name string) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == name
}

// isConstString accepts a string literal or one of the package's constants.
func isConstString(e ast.Expr, consts map[string]bool) bool {
	switch v := e.(type) {
	case *ast.BasicLit:
		return v.Kind == token.STRING
	case *ast.Ident:
		return consts[v.Name]
	}
	return false
}

// xFlags returns the NAME=VALUE arguments of every -X in a build's ldflags
// ("-X a.b=c" and "-X=a.b=c"; one ldflags entry may hold several flags).
func xFlags(ldflags []string) []string {
	var out []string
	for _, entry := range ldflags {
		fields := strings.Fields(entry)
		for i := 0; i < len(fields); i++ {
			switch f := fields[i]; {
			case f == "-X" && i+1 < len(fields):
				out = append(out, fields[i+1])
				i++
			case strings.HasPrefix(f, "-X="):
				out = append(out, strings.TrimPrefix(f, "-X="))
			}
		}
	}
	return out
}

func TestGoreleaserConfig(t *testing.T) {
	t.Parallel()
	cfg := readReleaseConfig(t)
	pkg := modulePath(t) + "/internal/version."
	vars := linkableVars(t)

	t.Run("version 2", func(t *testing.T) {
		if cfg.Version != 2 {
			t.Errorf("version: %d, want 2 (goreleaser v2's format)", cfg.Version)
		}
	})
	t.Run("ldflags", func(t *testing.T) {
		if len(cfg.Builds) == 0 {
			t.Fatal("no builds")
		}
		for _, b := range cfg.Builds {
			set := map[string]bool{}
			for _, x := range xFlags(b.Ldflags) {
				target, _, ok := strings.Cut(x, "=")
				name, inPkg := strings.CutPrefix(target, pkg)
				switch {
				case !ok:
					t.Errorf("build %s: -X %s has no =VALUE", b.ID, x)
				case !inPkg:
					t.Errorf("build %s: -X %s: want a variable of %s", b.ID, target, strings.TrimSuffix(pkg, "."))
				case !vars[name]:
					t.Errorf("build %s: -X %s: internal/version has no string variable %s that the linker can set", b.ID, target, name)
				default:
					set[name] = true
				}
			}
			if !set["Version"] {
				t.Errorf("build %s: no -X %sVersion: the release would print its fallback version", b.ID, pkg)
			}
		}
	})
	t.Run("checksum", func(t *testing.T) {
		c := cfg.Checksum
		if c.Disable || c.Algorithm != "sha256" || c.NameTemplate != "checksums.txt" {
			t.Errorf("checksum = %+v, want checksums.txt with sha256 (the README's sha256sum -c reads it)", c)
		}
	})
	t.Run("sboms cover the archives", func(t *testing.T) {
		covered := false
		for _, s := range cfg.SBOMs {
			checkKeys(t, "sboms", s, sbomKeys)
			// goreleaser's default for artifacts is archive; ids empty means every archive.
			artifacts, _ := s["artifacts"].(string)
			disabled, _ := s["disable"].(bool)
			if (artifacts == "archive" || artifacts == "") && s["ids"] == nil && !disabled {
				covered = true
			}
		}
		if !covered {
			t.Errorf("no sboms entry covers every archive (artifacts: archive, no ids): %v", cfg.SBOMs)
		}
	})
	t.Run("signs cover the checksum", func(t *testing.T) {
		signed := false
		for _, s := range cfg.Signs {
			checkKeys(t, "signs", s, signKeys)
			if s["artifacts"] != "checksum" {
				continue
			}
			signed = true
			args := stringList(s["args"])
			if s["cmd"] != "cosign" || !slices.Contains(args, "sign-blob") {
				t.Errorf("signs: cmd %v args %q, want cosign sign-blob", s["cmd"], args)
			}
			// The blob to sign, the output goreleaser uploads, and no prompt in CI.
			for _, want := range []string{"${artifact}", "--bundle=${signature}", "--yes"} {
				if !slices.Contains(args, want) {
					t.Errorf("signs: args %q lack %q", args, want)
				}
			}
			if sig, _ := s["signature"].(string); !strings.HasSuffix(sig, ".sigstore.json") {
				t.Errorf("signs: signature %q, want ${artifact}.sigstore.json (a Sigstore bundle: certificate and signature)", sig)
			}
		}
		if !signed {
			t.Errorf("no signs entry with artifacts: checksum: %v", cfg.Signs)
		}
	})
}

func checkKeys(t *testing.T, section string, entry map[string]any, allowed []string) {
	t.Helper()
	for k := range entry {
		if !slices.Contains(allowed, k) {
			t.Errorf("%s: unknown key %q (goreleaser v2 knows %s)", section, k, strings.Join(allowed, ", "))
		}
	}
}

func stringList(v any) []string {
	list, _ := v.([]any)
	out := make([]string, 0, len(list))
	for _, x := range list {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// The helpers that read the config must fail on what they guard against.
func TestXFlags(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		ldflags []string
		want    []string
	}{
		{[]string{"-s -w", "-X a/b.V=1"}, []string{"a/b.V=1"}},
		{[]string{"-s -w -X a/b.V=1 -X=a/b.C=2"}, []string{"a/b.V=1", "a/b.C=2"}},
		{[]string{"-X"}, nil},
		{nil, nil},
	} {
		if got := xFlags(tc.ldflags); !slices.Equal(got, tc.want) {
			t.Errorf("xFlags(%q) = %q, want %q", tc.ldflags, got, tc.want)
		}
	}
}

func TestLinkableVars(t *testing.T) {
	t.Parallel()
	vars := linkableVars(t)
	for _, name := range []string{"Version", "Commit", "Date"} {
		if !vars[name] {
			t.Errorf("%s not found as a linkable string variable: %v", name, vars)
		}
	}
}
