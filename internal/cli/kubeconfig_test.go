package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"k8s.io/client-go/tools/clientcmd"
)

// writeKubeconfigFile writes a kubeconfig with one context, current, whose
// cluster is named after it.
func writeKubeconfigFile(t *testing.T, dir, name, context string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	doc := "apiVersion: v1\nkind: Config\nclusters:\n- {name: " + context + "-cluster, cluster: {server: \"https://" + context + ":6443\"}}\n" +
		"users:\n- {name: " + context + "-user, user: {token: T}}\ncontexts:\n- {name: " + context + ", context: {cluster: " + context +
		"-cluster, user: " + context + "-user}}\ncurrent-context: " + context + "\n"
	if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// The kubeconfig is found as kubectl finds it: --kubeconfig, else
// $KUBECONFIG's files merged (the first file's current context), else
// ~/.kube/config; --context picks another context. With an inventory and
// neither flag, the API is reached through its first control plane, even
// when $KUBECONFIG is set.
func TestKubeconfigPrecedence(t *testing.T) {
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	if err := os.MkdirAll(filepath.Join(home, ".kube"), 0o700); err != nil {
		t.Fatal(err)
	}
	homeKubeconfig(t, writeKubeconfigFile(t, filepath.Join(home, ".kube"), "config", "home"))
	flagFile := writeKubeconfigFile(t, dir, "flag", "flag")
	envList := writeKubeconfigFile(t, dir, "env-a", "env-a") + string(os.PathListSeparator) + writeKubeconfigFile(t, dir, "env-b", "env-b")
	for _, tc := range []struct {
		name       string
		kubeconfig string // $KUBECONFIG
		args       []string
		inventory  string
		cluster    string // want; "" the first control plane (no kubeconfig)
		err        string
	}{
		{name: "the flag over $KUBECONFIG", kubeconfig: envList, args: []string{"--kubeconfig", flagFile}, cluster: "flag-cluster"},
		{name: "$KUBECONFIG's first file", kubeconfig: envList, cluster: "env-a-cluster"},
		{name: "$KUBECONFIG's merged list: a context of its second file", kubeconfig: envList, args: []string{"--context", "env-b"}, cluster: "env-b-cluster"},
		{name: "~/.kube/config without $KUBECONFIG", cluster: "home-cluster"},
		{name: "--context in ~/.kube/config", args: []string{"--context", "home"}, cluster: "home-cluster"},
		{name: "the flag's file only: not $KUBECONFIG's contexts", kubeconfig: envList, args: []string{"--kubeconfig", flagFile, "--context", "env-b"}, err: `--context: context "env-b" is not in the kubeconfig (its contexts: flag)`},
		{name: "a context that is nowhere", kubeconfig: envList, args: []string{"--context", "prod"}, err: `--context: context "prod" is not in the kubeconfig (its contexts: env-a, env-b)`},
		{name: "a kubeconfig that is not there", args: []string{"--kubeconfig", filepath.Join(dir, "gone")}, err: "--kubeconfig " + filepath.Join(dir, "gone") + ": "},
		{name: "an inventory: its first control plane", kubeconfig: envList, inventory: "c.yaml"},
		{name: "an inventory and --kubeconfig", inventory: "c.yaml", args: []string{"--kubeconfig", flagFile}, cluster: "flag-cluster"},
		{name: "an inventory and --context", kubeconfig: envList, inventory: "c.yaml", args: []string{"--context", "env-b"}, cluster: "env-b-cluster"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("KUBECONFIG", tc.kubeconfig)
			var k kubeFlags
			cmd := &cobra.Command{Use: "test"}
			k.addFlags(cmd)
			if err := cmd.ParseFlags(tc.args); err != nil {
				t.Fatal(err)
			}
			raw, cluster, err := k.api(tc.inventory)
			if tc.err != "" {
				if exitCode(err) != ExitUsage || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("got %v, want a usage error %q", err, tc.err)
				}
				return
			}
			if err != nil || cluster != tc.cluster {
				t.Fatalf("cluster %q, %v; want %q", cluster, err, tc.cluster)
			}
			if tc.cluster == "" {
				if raw != nil {
					t.Errorf("a kubeconfig, want the first control plane")
				}
				return
			}
			cfg, err := clientcmd.Load(raw)
			if err != nil || len(cfg.Contexts) != 1 || cfg.Contexts[cfg.CurrentContext].Cluster != tc.cluster {
				t.Errorf("%v:\n%s", err, raw)
			}
		})
	}
}

// On the command line: $KUBECONFIG reaches a cluster without -i, a missing
// context is bad input naming the ones there are, a swarm takes no
// kubeconfig.
func TestKubeconfigUsage(t *testing.T) {
	isolate(t)
	dir := t.TempDir()
	t.Setenv("KUBECONFIG", writeKubeconfigFile(t, dir, "config", "lab"))
	swarm := writeFile(t, "sw.yaml", "apiVersion: gpukit.dev/v1alpha1\nkind: Cluster\nmetadata: {name: sw}\nspec:\n  orchestrator: swarm\n"+
		"  hosts:\n  - {name: m-1, address: 127.0.0.2, roles: [manager]}\n")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"kubeflow status: a missing context", []string{"kubeflow", "status", "--context", "prod"}, `--context: context "prod" is not in the kubeconfig (its contexts: lab)`},
		{"kubeflow deploy: a missing context", []string{"kubeflow", "deploy", "--context", "prod", "--dry-run"}, `--context: context "prod" is not in the kubeconfig`},
		{"status of a swarm with a context", []string{"status", "-i", swarm, "--context", "lab"}, "--context: spec.orchestrator is swarm"},
		{"upgrade of a swarm with a kubeconfig", []string{"upgrade", "driver", "-i", swarm, "--driver", "590.48.01", "--kubeconfig", filepath.Join(dir, "config")}, "--kubeconfig: spec.orchestrator is swarm"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("GPUKIT_STATE_DIR", t.TempDir())
			code, _, errOut := run(t, tc.args...)
			if code != ExitUsage || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, errOut, ExitUsage, tc.want)
			}
		})
	}
}
