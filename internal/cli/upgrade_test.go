package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpukit/gpukit/pkg/upgrade"
)

// upgrade driver refuses bad input before any host is contacted (exit 2),
// and will not start a second rollout over an unfinished one.
func TestUpgradeDriverUsage(t *testing.T) {
	inv := writeFile(t, "up.yaml", "apiVersion: gpukit.dev/v1alpha1\nkind: Cluster\nmetadata: {name: up}\nspec:\n  orchestrator: kubernetes\n  ssh: {knownHostsFile: /dev/null}\n"+
		"  hosts:\n  - {name: cp-1, address: 127.0.0.2, roles: [control-plane]}\n  - {name: gpu-1, address: 127.0.0.3, roles: [worker]}\n")
	swarmInv := writeFile(t, "sw.yaml", "apiVersion: gpukit.dev/v1alpha1\nkind: Cluster\nmetadata: {name: sw}\nspec:\n  orchestrator: swarm\n  ssh: {knownHostsFile: /dev/null}\n"+
		"  hosts:\n  - {name: m-1, address: 127.0.0.2, roles: [manager]}\n")
	stateDir := t.TempDir()
	t.Setenv("GPUKIT_STATE_DIR", stateDir)
	unfinished := filepath.Join(t.TempDir(), "unfinished.json")
	st := upgrade.NewState(unfinished, "up", inv, upgrade.Target{Driver: "590.48.01"}, time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	if err := st.Set("gpu-1", upgrade.InProgress, "", time.Now()); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no --driver", []string{"upgrade", "driver", "-i", inv}, "--driver VERSION"},
		{"bad --max-unavailable", []string{"upgrade", "driver", "-i", inv, "--driver", "590.48.01", "--max-unavailable", "0"}, `--max-unavailable "0": want a number of nodes`},
		{"bad percentage", []string{"upgrade", "driver", "-i", inv, "--driver", "590.48.01", "--max-unavailable", "150%"}, "percentage from 1% to 100%"},
		{"bad --selector", []string{"upgrade", "driver", "-i", inv, "--driver", "590.48.01", "--selector", "a in (b"}, `--selector "a in (b"`},
		{"unknown host", []string{"upgrade", "driver", "-i", inv, "--driver", "590.48.01", "--hosts", "gpu-9"}, "gpu-9 is not in the inventory"},
		{"malformed driver", []string{"upgrade", "driver", "-i", inv, "--driver", "59o"}, `--driver: spec.versions.nvidiaDriver: malformed driver version "59o"`},
		{"swarm and a grace period", []string{"upgrade", "driver", "-i", swarmInv, "--driver", "590.48.01", "--grace-period", "5s"}, "--grace-period: spec.orchestrator is swarm: a swarm service's own stop grace period applies"},
		{"swarm and a kubeconfig", []string{"upgrade", "driver", "-i", swarmInv, "--driver", "590.48.01", "--kubeconfig", inv}, "--kubeconfig: spec.orchestrator is swarm"},
		{"nowhere to write the versions", []string{"upgrade", "driver", "-i", inv, "--driver", "590.48.01", "--write-inventory"}, "--write-inventory: " + inv + ": the inventory has no spec.versions block"},
		{"nothing to resume", []string{"upgrade", "driver", "-i", inv, "--resume"}, "--resume: no rollout to resume"},
		{"an unfinished rollout", []string{"upgrade", "driver", "-i", inv, "--driver", "595", "--state", unfinished}, "a rollout to driver 590.48.01 started 2026-12-01T10:00:00Z is unfinished (in-progress: gpu-1): --resume to go on"},
		{"resume with other versions", []string{"upgrade", "driver", "-i", inv, "--driver", "595", "--state", unfinished, "--resume"}, `--resume --driver 595: the rollout being resumed installs "590.48.01"`},
		{"no subcommand", []string{"upgrade"}, "gpukit upgrade driver"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := run(t, tc.args...)
			if code != ExitUsage || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, stderr, ExitUsage, tc.want)
			}
		})
	}
	if entries, _ := os.ReadDir(stateDir); len(entries) != 0 {
		t.Errorf("bad input left a rollout state: %v", entries)
	}
}
