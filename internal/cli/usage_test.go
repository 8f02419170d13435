package cli

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gpukit/gpukit/test/sshkey"
)

// A command line cobra refuses, or one a command refuses before it does
// anything, is a usage error: exit 2, with a message that reads well.
func TestUsageErrors(t *testing.T) {
	isolate(t)
	inv := writeFile(t, "ansible.ini", "[kube_node]\ngpu01 ansible_host=10.0.1.1\n")
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string // in stderr (stdout for exit 0)
	}{
		{"a mistyped command", []string{"inti"}, ExitUsage, "Error: unknown command \"inti\" for \"gpukit\"\n\nDid you mean this?\n  init\n\nRun 'gpukit --help' for its commands\n"},
		{"a mistyped command with flags", []string{"inti", "-i", "cluster.yaml"}, ExitUsage, "unknown command \"inti\" for \"gpukit\"\n\nDid you mean this?\n  init"},
		{"a command that is none", []string{"frobnicate"}, ExitUsage, "unknown command \"frobnicate\" for \"gpukit\"\n\nRun 'gpukit --help'"},
		{"a mistyped subcommand", []string{"inventory", "valdate"}, ExitUsage, "unknown command \"valdate\" for \"gpukit inventory\"\n\nDid you mean this?\n  validate"},
		{"a mistyped subcommand with flags", []string{"upgrade", "drivr", "--driver", "590"}, ExitUsage, "unknown command \"drivr\" for \"gpukit upgrade\"\n\nDid you mean this?\n  driver"},
		{"a group without its subcommand", []string{"inventory"}, ExitUsage, "name what to run: gpukit inventory example, gpukit inventory import, gpukit inventory schema, gpukit inventory validate (see gpukit inventory --help)"},
		{"kubeflow without its subcommand", []string{"kubeflow"}, ExitUsage, "name what to run: gpukit kubeflow deploy, gpukit kubeflow status"},
		{"a missing required flag", []string{"inventory", "import", inv}, ExitUsage, `required flag(s) "from" not set`},
		{"an unknown flag", []string{"status", "--colour"}, ExitUsage, "unknown flag: --colour"},
		{"too many arguments", []string{"preflight", "extra"}, ExitUsage, "accepts 0 arg(s), received 1"},
		{"too few arguments", []string{"add-node", "-i", inv}, ExitUsage, "requires at least 1 arg(s)"},
		{"a flag a command does not honour", []string{"plan", "-i", inv, "--merge-kubeconfig"}, ExitUsage, "unknown flag: --merge-kubeconfig"},
		{"gpukit alone is its help", nil, ExitOK, "Available Commands:"},
		{"help of a command", []string{"help", "upgrade", "driver"}, ExitOK, "Usage:\n  gpukit upgrade driver -i FILE --driver VERSION [flags]"},
		{"help of a command that is none", []string{"help", "inventory", "valdate"}, ExitUsage, "unknown command \"valdate\" for \"gpukit inventory\"\n\nDid you mean this?\n  validate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := run(t, tc.args...)
			got := errOut
			if tc.code == ExitOK {
				got = out
			}
			if code != tc.code || !strings.Contains(got, tc.want) {
				t.Errorf("exit %d, want %d\nstdout: %s\nstderr: %q\nwant: %q", code, tc.code, out, errOut, tc.want)
			}
			if strings.Contains(errOut, `\t`) {
				t.Errorf("a tab reaches the terminal escaped: %q", errOut)
			}
		})
	}
}

// Every command of the tree: --help works and shows examples; an unknown
// flag, an unknown subcommand (or a word where none is taken), a missing
// required flag and too few arguments are usage errors (exit 2).
func TestCommandTree(t *testing.T) {
	isolate(t)
	var walk func(*cobra.Command) []*cobra.Command
	walk = func(c *cobra.Command) []*cobra.Command {
		all := []*cobra.Command{c}
		for _, sub := range c.Commands() {
			all = append(all, walk(sub)...)
		}
		return all
	}
	commands := walk(newRoot(Streams{}))
	if len(commands) < 15 {
		t.Fatalf("only %d commands in the tree", len(commands))
	}
	for _, c := range commands {
		path := strings.Fields(c.CommandPath())[1:]
		t.Run(strings.Join(append([]string{"gpukit"}, path...), " "), func(t *testing.T) {
			if c.Example == "" {
				t.Errorf("no Example")
			}
			for _, line := range strings.Split(c.Example, "\n") {
				if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") && !strings.Contains(line, "gpukit "+strings.Join(path, " ")) {
					t.Errorf("example %q does not run %s", line, c.CommandPath())
				}
			}
			args := func(more ...string) []string { return append(slices.Clone(path), more...) }
			if code, out, errOut := run(t, args("--help")...); code != ExitOK || !strings.Contains(out, "Examples:") {
				t.Errorf("--help: exit %d, stdout %q, stderr %q", code, out, errOut)
			}
			expectUsage := func(what string, a []string) {
				t.Helper()
				if code, _, errOut := run(t, a...); code != ExitUsage || !strings.HasPrefix(errOut, "Error: ") {
					t.Errorf("%s (%q): exit %d, stderr %q", what, a, code, errOut)
				}
			}
			expectUsage("an unknown flag", args("--no-such-flag"))
			// A leaf taking arguments would read one as its argument
			// (add-node's host, completion's shell): still exit 2.
			expectUsage("an unknown subcommand", args("no-such-command"))
			var required []string
			c.Flags().VisitAll(func(f *pflag.Flag) {
				if _, ok := f.Annotations[cobra.BashCompOneRequiredFlag]; ok {
					required = append(required, f.Name)
				}
			})
			if len(required) > 0 {
				expectUsage("a missing required flag", args(filepath.Join(t.TempDir(), "input")))
			}
			if c.Args != nil && c.Args(c, nil) != nil {
				expectUsage("too few arguments", args())
			}
		})
	}
}

// Each command shows, and takes, only the flags it can act on: plan
// reboots nothing and writes no kubeconfig, read-only commands change no
// host, kubeflow works through one host.
func TestFlagsEachCommandHonours(t *testing.T) {
	for _, tc := range []struct {
		command  []string
		has, not []string
	}{
		{[]string{"init"}, []string{"write-timeout", "max-parallel-reboots", "reboot-timeout", "kubeconfig-out", "merge-kubeconfig", "dry-run", "driver", "concurrency"}, []string{"hosts", "kubeconfig", "context"}},
		{[]string{"plan"}, []string{"driver", "cuda", "toolkit", "concurrency", "read-timeout"}, []string{"write-timeout", "max-parallel-reboots", "reboot-timeout", "kubeconfig-out", "merge-kubeconfig", "dry-run", "kubeconfig"}},
		{[]string{"add-node"}, []string{"max-parallel-reboots", "reboot-timeout", "write-timeout", "dry-run"}, []string{"kubeconfig-out", "merge-kubeconfig", "hosts"}},
		{[]string{"preflight"}, []string{"hosts", "concurrency", "read-timeout"}, []string{"write-timeout", "dry-run", "driver", "kubeconfig"}},
		{[]string{"status"}, []string{"hosts", "kubeconfig", "context", "concurrency"}, []string{"write-timeout", "dry-run"}},
		{[]string{"reset"}, []string{"hosts", "yes", "dry-run", "write-timeout"}, []string{"kubeconfig", "driver"}},
		{[]string{"upgrade", "driver"}, []string{"hosts", "kubeconfig", "context", "max-parallel-reboots", "write-timeout"}, []string{"kubeconfig-out", "merge-kubeconfig"}},
		{[]string{"kubeflow", "deploy"}, []string{"kubeconfig", "context", "read-timeout", "dry-run"}, []string{"concurrency", "write-timeout", "hosts"}},
		{[]string{"kubeflow", "status"}, []string{"kubeconfig", "context"}, []string{"concurrency", "write-timeout", "dry-run"}},
	} {
		t.Run(strings.Join(tc.command, " "), func(t *testing.T) {
			c, _, err := newRoot(Streams{}).Find(tc.command)
			if err != nil {
				t.Fatal(err)
			}
			_, help, _ := run(t, append(slices.Clone(tc.command), "--help")...)
			for _, f := range tc.has {
				if c.Flags().Lookup(f) == nil || !strings.Contains(help, "--"+f) {
					t.Errorf("--%s is missing", f)
				}
			}
			for _, f := range tc.not {
				if c.Flags().Lookup(f) != nil {
					t.Errorf("--%s cannot act here", f)
				}
			}
		})
	}
}

// --hosts: every unknown name is said at once, before any host is
// contacted.
func TestHostsFlag(t *testing.T) {
	isolate(t)
	inv := writeFile(t, "c.yaml", "apiVersion: gpukit.dev/v1alpha1\nkind: Cluster\nmetadata: {name: lab}\nspec:\n  orchestrator: kubernetes\n"+
		"  hosts:\n  - {name: cp-1, address: 127.0.0.2, roles: [control-plane]}\n  - {name: gpu-1, address: 127.0.0.3, roles: [worker]}\n")
	for _, command := range [][]string{{"preflight"}, {"status"}, {"reset", "--yes"}, {"upgrade", "driver", "--driver", "590.48.01"}} {
		t.Run(command[0], func(t *testing.T) {
			t.Setenv("GPUKIT_STATE_DIR", t.TempDir())
			code, _, errOut := run(t, append(slices.Clone(command), "-i", inv, "--hosts", "gpu-9,gpu-1,cp-7")...)
			if code != ExitUsage || !strings.Contains(errOut, "gpu-9, cp-7 are not in the inventory") {
				t.Errorf("exit %d, stderr %q", code, errOut)
			}
		})
	}
}

// ssh.agent without an agent, a key file that is not there: one bad-input
// error before any host is dialled, not one failure per host. An agent
// that is not there is skipped, with a note, when a key file logs in.
func TestLocalLoginProblems(t *testing.T) {
	isolate(t)
	pemKey, _ := sshkey.New(t, "")
	key := writeFile(t, "id_ed25519", string(pemKey))
	inventoryWith := func(ssh string) string {
		return writeFile(t, "c.yaml", "apiVersion: gpukit.dev/v1alpha1\nkind: Cluster\nmetadata: {name: lab}\nspec:\n  ssh:\n    knownHostsFile: "+
			filepath.Join(t.TempDir(), "known_hosts")+"\n    "+ssh+"\n  hosts:\n  - {name: \"gpu-[1:3]\", address: \"127.0.0.[2:4]\", roles: [control-plane]}\n")
	}
	// A log directory that cannot be made stops the run after the logins
	// were checked and before any dial.
	noRun := []string{"--log-dir", "/proc/gpukit-test/logs"}
	for _, tc := range []struct {
		name, ssh, want, not string
	}{
		{"no agent", "agent: true", "c.yaml:9:5: host gpu-1 (and 2 more): ssh.agent: no ssh-agent to use (SSH_AUTH_SOCK is not set), and no ssh.keyFile or ssh.password", "gpu-2:"},
		{"a missing key file", "keyFile: /nonexistent/id_ed25519", "host gpu-1: ssh.keyFile: open /nonexistent/id_ed25519: no such file or directory", "gpu-2:"},
		{"no agent, a key file", "agent: true\n    keyFile: " + key, "note: ssh.agent: no ssh-agent to use (SSH_AUTH_SOCK is not set): host gpu-1 (and 2 more) logs in with its key file or password only\n", "Error: c.yaml"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := run(t, append([]string{"preflight", "-i", inventoryWith(tc.ssh)}, noRun...)...)
			if code != ExitUsage || !strings.Contains(errOut, tc.want) || strings.Contains(errOut, tc.not) {
				t.Errorf("exit %d, stderr %q; want %q", code, errOut, tc.want)
			}
		})
	}
}
