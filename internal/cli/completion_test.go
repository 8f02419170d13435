package cli

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The shell completes -o's values, the inventory's hosts for --hosts (from
// -i FILE) and the kubeconfig's contexts for --context.
func TestCompleteFlagValues(t *testing.T) {
	isolate(t)
	inv := writeFile(t, "c.yaml", "apiVersion: gpukit.dev/v1alpha1\nkind: Cluster\nmetadata: {name: lab}\nspec:\n"+
		"  hosts:\n  - {name: cp-1, address: 10.0.0.1, roles: [control-plane]}\n  - {name: \"gpu-[1:3]\", address: \"10.0.1.[1:3]\", roles: [worker]}\n")
	dir := t.TempDir()
	for name, ctx := range map[string]string{"a": "lab-admin@lab", "b": "prod"} {
		doc := "apiVersion: v1\nkind: Config\nclusters:\n- {name: c-" + name + ", cluster: {server: \"https://10.0.0.1:6443\"}}\nusers:\n- {name: u-" + name +
			", user: {token: T}}\ncontexts:\n- {name: " + ctx + ", context: {cluster: c-" + name + ", user: u-" + name + "}}\ncurrent-context: " + ctx + "\n"
		if err := os.WriteFile(filepath.Join(dir, name), []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("KUBECONFIG", filepath.Join(dir, "a")+string(os.PathListSeparator)+filepath.Join(dir, "b"))
	for _, tc := range []struct {
		args []string
		want []string
		not  string
	}{
		{[]string{"preflight", "-o", ""}, []string{"auto\tlive view on a terminal, plain otherwise", "plain\tone line per event", "json\tone JSON object per line"}, ""},
		{[]string{"version", "-o", "j"}, []string{"json\tone JSON object per line"}, "auto"},
		{[]string{"preflight", "-i", inv, "--hosts", "gpu-"}, []string{"gpu-1", "gpu-2", "gpu-3"}, "cp-1"},
		{[]string{"status", "-i", inv, "--hosts", "cp-1,g"}, []string{"cp-1,gpu-1", "cp-1,gpu-3"}, "cp-1,cp-1"},
		{[]string{"reset", "--hosts", ""}, nil, "gpu-1"}, // no -i: nothing to offer
		{[]string{"kubeflow", "status", "--context", ""}, []string{"lab-admin@lab", "prod"}, ""},
		{[]string{"upgrade", "driver", "--context", "p"}, []string{"prod"}, "lab-admin@lab"},
		{[]string{"status", "--kubeconfig", filepath.Join(dir, "b"), "--context", ""}, []string{"prod"}, "lab-admin@lab"},
		{[]string{"plan", "--skip-phases", "nvidia/d"}, []string{"nvidia/driver"}, "nvidia/verify"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, out, errOut := run(t, append([]string{"__complete"}, tc.args...)...)
			if code != ExitOK {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			lines := strings.Split(strings.TrimSpace(out), "\n")
			lines = lines[:len(lines)-1] // cobra's directive, ":4"
			for _, w := range tc.want {
				if !slices.Contains(lines, w) {
					t.Errorf("completions lack %q: %q", w, lines)
				}
			}
			for _, l := range lines {
				if tc.not != "" && strings.HasPrefix(l, tc.not) {
					t.Errorf("completion %q should not be offered", l)
				}
			}
		})
	}
}
