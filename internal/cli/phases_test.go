package cli

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gpukit/gpukit/internal/flow"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/test/golden"
)

// Every command that runs phases lists them from the flow that runs them,
// nested ones under their rollout: the goldens are the lists a user reads.
func TestListPhases(t *testing.T) {
	// The example as a swarm: managers instead of control planes, docker.
	ex := strings.NewReplacer("orchestrator: kubernetes", "orchestrator: swarm",
		"roles: [control-plane, ingress]", "roles: [manager]",
		"runtime: containerd", "runtime: docker", `containerRuntime: "2.3.1"`, `containerRuntime: "28.2.2"`,
	).Replace(string(inventory.Example()))
	swarm := writeFile(t, "swarm.yaml", ex)
	commands := [][]string{
		{"init"}, {"plan"}, {"add-node", "gpu-001"}, {"preflight"}, {"status"}, {"reset"},
		{"upgrade", "driver"}, {"mig", "apply"}, {"verify"}, {"kubeflow", "deploy"}, {"kubeflow", "status"}, {"platform", "deploy"}, {"platform", "status"},
		{"etcd", "backup"}, {"etcd", "restore"}, {"upgrade", "kubernetes"},
	}
	for _, inv := range []struct{ name, file string }{{"kubernetes", ""}, {"swarm", swarm}} {
		for _, c := range commands {
			name := strings.Join(c, "-") + "-" + inv.name
			t.Run(name, func(t *testing.T) {
				args := append(append([]string{}, c...), "--list-phases")
				if inv.file != "" {
					args = append(args, "-i", inv.file)
				}
				code, out, errOut := run(t, args...)
				if (c[0] == "kubeflow" || c[0] == "etcd" || strings.Join(c, " ") == "upgrade kubernetes") && inv.name == "swarm" {
					// The platform runs on Kubernetes only: bad input, said so.
					if code != ExitUsage || !strings.Contains(errOut, "spec.orchestrator is swarm") {
						t.Fatalf("exit %d, stderr %q", code, errOut)
					}
					return
				}
				if code != ExitOK {
					t.Fatalf("exit %d: %s%s", code, out, errOut)
				}
				out = strings.ReplaceAll(out, swarm, "SWARM.yaml")
				golden.AssertString(t, filepath.Join("testdata", "phases", name+".txt"), out)

				code, out, _ = run(t, append(args, "-o", "json")...)
				var res flow.PhaseList
				if code != ExitOK || json.Unmarshal([]byte(out), &res) != nil || res.Type != flow.KindPhases || len(res.Phases) == 0 {
					t.Fatalf("-o json: exit %d: %s", code, out)
				}
				golden.AssertString(t, filepath.Join("testdata", "phases", name+".json"), out)
			})
		}
	}
}

// --list-phases contacts nothing and needs no secret: the example inventory
// names hosts that do not exist, yet it answers at once.
func TestListPhasesNamesTheRollout(t *testing.T) {
	code, out, _ := run(t, "upgrade", "driver", "--list-phases")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, out)
	}
	for _, want := range []string{"upgrade/rollout", "\n    upgrade/cordon", "\n    nvidia/driver", "\n    upgrade/uncordon"} {
		if !strings.Contains(out, want) {
			t.Errorf("the list lacks %q:\n%s", want, out)
		}
	}
}

// The shell completes --only-phases and --skip-phases with the command's
// phase names and groups, the last of a comma-separated list.
func TestCompletePhases(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
		not  string
	}{
		{[]string{"init", "--only-phases", "nvidia/d"}, []string{"nvidia/driver"}, "nvidia/verify"},
		{[]string{"init", "--skip-phases", "preflight/facts,kub"}, []string{"preflight/facts,kubernetes", "preflight/facts,kubernetes/init"}, "nvidia"},
		{[]string{"upgrade", "driver", "--only-phases", "upgrade/"}, []string{"upgrade/plan", "upgrade/rollout"}, "preflight/facts"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, out, errOut := run(t, append([]string{"__complete"}, tc.args...)...)
			if code != ExitOK {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			lines := strings.Split(strings.TrimSpace(out), "\n")
			for _, w := range tc.want {
				if !slices.Contains(lines, w) {
					t.Errorf("completions lack %q: %q", w, lines)
				}
			}
			for _, l := range lines {
				if strings.HasPrefix(l, tc.not) {
					t.Errorf("completion %q should not be offered", l)
				}
			}
		})
	}
}
