// Package cli is gpukit's command line: cobra commands that turn flags into
// options, choose the display and map errors to exit codes.
package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/gpukit/gpukit/pkg/safetext"
	"github.com/spf13/cobra"
)

// Streams are the process's standard streams, injected so tests can run
// commands in-process.
type Streams struct {
	In  io.Reader
	Out io.Writer
	Err io.Writer
}

// Execute runs the gpukit command line and returns the exit code.
func Execute(ctx context.Context, args []string, s Streams) int {
	root := newRoot(s)
	root.SetArgs(args)
	ran := runsMarked(root)
	err := root.ExecuteContext(ctx)
	if err != nil && !*ran {
		// cobra refused the command line before any command ran (a
		// missing required flag, an argument it checks itself): usage.
		err = usage(err)
	}
	if err != nil {
		// Errors quote inventory values and host output; whatever slipped
		// through unquoted cannot act on the terminal.
		fmt.Fprintf(s.Err, "Error: %s\n", strings.Join(escapeLines(err.Error()), "\n"))
	}
	return exitCode(err)
}

func newRoot(s Streams) *cobra.Command {
	root := &cobra.Command{
		Use:   "gpukit",
		Short: "Turn a rack of baremetal GPU servers into a GPU cluster",
		Long: `gpukit reads an inventory of GPU servers, connects to every host over SSH and
installs the NVIDIA driver, CUDA and a GPU-aware container runtime, then
Kubernetes (kubeadm) or Docker Swarm and the platform on top.

Exit codes: 0 success, 1 failure, 2 bad input or usage (nothing changed on any
host), 3 the run finished but some hosts failed.`,
		Example: `  gpukit inventory example > cluster.yaml
  gpukit preflight -i cluster.yaml
  gpukit init -i cluster.yaml`,
		SilenceUsage:  true,
		SilenceErrors: true,
		// Without a command: the help, as for --help.
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	root.SetIn(s.In)
	root.SetOut(s.Out)
	root.SetErr(s.Err)
	// Flag parsing errors are usage errors (exit 2), not failures. A
	// mistyped command followed by flags ("gpukit inti -i c.yaml") fails
	// on the flags first, but the word is the mistake: say so.
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		if args := cmd.Flags().Args(); cmd.HasAvailableSubCommands() && len(args) > 0 {
			return unknownCommand(cmd, args[0])
		}
		return usage(err)
	})
	root.AddCommand(
		newVersionCmd(),
		newInventoryCmd(),
		newPreflightCmd(s),
		newInitCmd(s),
		newPlanCmd(s),
		newAddNodeCmd(s),
		newUpgradeCmd(s),
		newMIGCmd(s),
		newVerifyCmd(s),
		newStatusCmd(s),
		newKubeflowCmd(s),
		newPlatformCmd(s),
		newResetCmd(s),
		newBundleCmd(s),
		newEtcdCmd(s),
		newCompletionCmd(),
	)
	root.Args = subcommandArgs
	root.SetHelpCommand(newHelpCmd())
	return root
}

// newHelpCmd is cobra's help command, but a topic that names no command is
// a usage error, as the command itself would be (cobra prints the root's
// help for it).
func newHelpCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "help [command]",
		Short:   "Help about any command",
		Example: "  gpukit help upgrade driver",
		RunE: func(cmd *cobra.Command, args []string) error {
			c, rest, err := cmd.Root().Find(args)
			if err == nil && len(rest) > 0 {
				err = unknownCommand(c, rest[0])
			}
			if err != nil {
				return err
			}
			return c.Help()
		},
		ValidArgsFunction: func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
			c, _, err := cmd.Root().Find(args)
			if err != nil {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var names []string
			for _, sub := range c.Commands() {
				if sub.IsAvailableCommand() && strings.HasPrefix(sub.Name(), toComplete) {
					names = append(names, sub.Name()+"\t"+sub.Short)
				}
			}
			return names, cobra.ShellCompDirectiveNoFileComp
		},
	}
}

// group makes cmd a command that holds subcommands: a word after it that
// names none of them is a usage error with suggestions, and so is no word
// at all, naming them (cobra would print the help and exit 0 for both).
func group(cmd *cobra.Command, subs ...*cobra.Command) *cobra.Command {
	cmd.AddCommand(subs...)
	cmd.Args = subcommandArgs
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		var names []string
		for _, c := range cmd.Commands() {
			if c.IsAvailableCommand() {
				names = append(names, c.CommandPath())
			}
		}
		return usage(fmt.Errorf("name what to run: %s (see %s --help)", strings.Join(names, ", "), cmd.CommandPath()))
	}
	return cmd
}

// subcommandArgs refuses a word that names no subcommand.
func subcommandArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return unknownCommand(cmd, args[0])
	}
	return nil
}

// unknownCommand is cobra's message for a command it does not know, with
// its suggestions indented by spaces: cobra's tab would reach the terminal
// as a literal \t once the message is escaped.
func unknownCommand(cmd *cobra.Command, name string) error {
	msg := fmt.Sprintf("unknown command %s for %q", safetext.Quote(name), cmd.CommandPath())
	if cmd.SuggestionsMinimumDistance <= 0 {
		cmd.SuggestionsMinimumDistance = 2 // cobra's default, set where it suggests itself
	}
	if s := cmd.SuggestionsFor(name); len(s) > 0 {
		msg += "\n\nDid you mean this?\n  " + strings.Join(s, "\n  ")
	}
	return usage(fmt.Errorf("%s\n\nRun '%s --help' for its commands", msg, cmd.CommandPath()))
}

// runsMarked wraps the RunE of every command under root to record that
// one ran: an error before that is cobra's refusal of the command line.
func runsMarked(root *cobra.Command) *bool {
	ran := new(bool)
	var mark func(*cobra.Command)
	mark = func(c *cobra.Command) {
		if run := c.RunE; run != nil {
			c.RunE = func(cmd *cobra.Command, args []string) error {
				*ran = true
				return run(cmd, args)
			}
		}
		for _, sub := range c.Commands() {
			mark(sub)
		}
	}
	mark(root)
	return ran
}

func escapeLines(s string) []string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = safetext.Escape(l)
	}
	return lines
}

// exactArgs is cobra.ExactArgs with the usage exit code.
func exactArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		return usage(cobra.ExactArgs(n)(cmd, args))
	}
}
