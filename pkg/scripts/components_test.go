package scripts

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpukit/gpukit/pkg/osfamily"
)

// enable_components (templates/lib/components.tmpl) edits the host's own
// apt sources, deb822 and one-line alike: it adds the components to the
// release's sources only, leaves other repositories alone, and changes
// nothing on a second call.
func TestEnableComponents(t *testing.T) {
	t.Parallel()
	debian, _ := osfamily.Detect("debian", "12")
	cmd, err := NVIDIARepo(NVIDIARepoParams{Family: debian, Source: "distribution", Components: []string{"contrib", "non-free", "non-free-firmware"}})
	if err != nil {
		t.Fatal(err)
	}
	fn := cmd.Script[strings.Index(cmd.Script, "enable_components() {"):]
	fn = fn[:strings.Index(fn, "\n}\n")+3]
	root := t.TempDir()
	fn = strings.ReplaceAll(fn, "/etc/apt/", root+"/etc/apt/")
	if err := os.MkdirAll(filepath.Join(root, "etc/apt/sources.list.d"), 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string][2]string{
		"etc/apt/sources.list.d/debian.sources": {
			"Types: deb\nURIs: http://deb.debian.org/debian\nSuites: bookworm bookworm-updates\nComponents: main\nSigned-By: /k\n\n" +
				"Types: deb\nURIs: http://deb.debian.org/debian-security\nSuites: bookworm-security\nComponents: main contrib\nSigned-By: /k\n\n" +
				"Types: deb\nURIs: https://download.docker.com/linux/debian\nSuites: bookworm\nComponents: stable\n",
			"Types: deb\nURIs: http://deb.debian.org/debian\nSuites: bookworm bookworm-updates\nComponents: main contrib non-free non-free-firmware\nSigned-By: /k\n\n" +
				"Types: deb\nURIs: http://deb.debian.org/debian-security\nSuites: bookworm-security\nComponents: main contrib non-free non-free-firmware\nSigned-By: /k\n\n" +
				// Docker's repository (no main) is left alone
				"Types: deb\nURIs: https://download.docker.com/linux/debian\nSuites: bookworm\nComponents: stable\n",
		},
		"etc/apt/sources.list": {
			"# comment\ndeb http://deb.debian.org/debian bookworm main\ndeb [arch=amd64 signed-by=/x] http://deb.debian.org/debian-security bookworm-security main non-free\ndeb http://repo.example/ stable main\n",
			"# comment\ndeb http://deb.debian.org/debian bookworm main contrib non-free non-free-firmware\ndeb [arch=amd64 signed-by=/x] http://deb.debian.org/debian-security bookworm-security main non-free contrib non-free-firmware\ndeb http://repo.example/ stable main\n",
		},
	}
	for name, c := range files {
		if err := os.WriteFile(filepath.Join(root, name), []byte(c[0]), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run := func() string {
		out, err := exec.Command("bash", "-c", fn+"\nenable_components contrib non-free non-free-firmware").CombinedOutput()
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		return string(out)
	}
	if out := run(); strings.Count(out, "gpukit: enabled components") != 2 {
		t.Errorf("first call said %q", out)
	}
	for name, c := range files {
		got, _ := os.ReadFile(filepath.Join(root, name))
		if string(got) != c[1] {
			t.Errorf("%s:\n%s\nwant:\n%s", name, got, c[1])
		}
	}
	if out := run(); out != "" {
		t.Errorf("second call changed something: %q", out)
	}
}
