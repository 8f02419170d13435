package scripts

import (
	"io/fs"
	"path"
	"strings"
	"testing"

	"github.com/gpukit/gpukit/pkg/facts"
	"github.com/gpukit/gpukit/pkg/osfamily"
	"github.com/gpukit/gpukit/pkg/ssh"
	"github.com/gpukit/gpukit/test/golden"
	"github.com/gpukit/gpukit/test/shellcheck"
)

// anyFamily names the golden file of a script that is the same on every
// OS family (it renders nothing family-specific).
const anyFamily = "any"

// golden is one rendered script: its template, the family it was rendered
// for, and how.
type goldenCase struct {
	template string
	family   string
	render   func() (ssh.Command, error)
}

// cases lists every script with the parameters of its golden files: one per
// OS family for scripts that differ per family.
func cases() []goldenCase {
	return []goldenCase{
		{probeTemplate.name, anyFamily, func() (ssh.Command, error) {
			return Probe(ProbeParams{GPUFields: facts.GPUQueryFields()})
		}},
	}
}

func (c goldenCase) path() string {
	return path.Join("testdata", strings.TrimSuffix(c.template, ".sh"), c.family+".sh")
}

// TestGolden compares every rendered script with its golden file
// (go test ./pkg/scripts -update rewrites them), and runs bash -n and
// shellcheck on it.
func TestGolden(t *testing.T) {
	t.Parallel()
	for _, c := range cases() {
		t.Run(c.path(), func(t *testing.T) {
			t.Parallel()
			cmd, err := c.render()
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(cmd.Script, Prelude) {
				t.Error("script does not start with the strict prelude")
			}
			golden.AssertString(t, c.path(), cmd.Script)
			shellcheck.Check(t, c.path(), cmd.Script)
		})
	}
}

// Every template has golden cases, for one family or for each: a script
// added without them fails here.
func TestEveryTemplateHasGoldenFiles(t *testing.T) {
	t.Parallel()
	families := map[string][]string{}
	for _, c := range cases() {
		families[c.template] = append(families[c.template], c.family)
	}
	all := len(osfamily.All())
	err := fs.WalkDir(templates, "templates", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fams := families[path.Base(p)]
		switch {
		case len(fams) == 0:
			t.Errorf("%s has no golden case", p)
		case len(fams) > 1 && len(fams) != all:
			t.Errorf("%s is rendered for %d of %d OS families: %v", p, len(fams), all, fams)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// The probe asks nvidia-smi for exactly the fields the parser reads.
func TestProbeUsesTheParsersFields(t *testing.T) {
	t.Parallel()
	cmd, err := Probe(ProbeParams{GPUFields: facts.GPUQueryFields()})
	if err != nil {
		t.Fatal(err)
	}
	if want := "--query-gpu=" + strings.Join(facts.GPUQueryFields(), ","); !strings.Contains(cmd.Script, want) {
		t.Errorf("probe lacks %q", want)
	}
	if !cmd.Sudo {
		t.Error("the probe must run as root")
	}
}

func TestParamsAreValidatedBeforeRendering(t *testing.T) {
	t.Parallel()
	for _, bad := range [][]string{nil, {"index; rm -rf /"}, {"uuid", "$(id)"}, {"Name"}} {
		if _, err := Probe(ProbeParams{GPUFields: bad}); err == nil {
			t.Errorf("fields %q accepted", bad)
		}
	}
}

func TestQuote(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"plain":     "plain",
		"two words": "'two words'",
		"it's":      `"it's"`,
		"$(reboot)": "'$(reboot)'",
		"a\nb":      "$'a\\nb'",
		"tab\there": "$'tab\\there'",
		"":          "''",
	} {
		if got, err := Quote(in); err != nil || got != want {
			t.Errorf("Quote(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := Quote("nul\x00"); err == nil {
		t.Error("a NUL byte cannot be quoted and must be refused")
	}
}
