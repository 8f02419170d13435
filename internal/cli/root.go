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
	err := root.ExecuteContext(ctx)
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
Kubernetes (kubeadm) or Docker Swarm and the platform on top.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(s.In)
	root.SetOut(s.Out)
	root.SetErr(s.Err)
	// Flag parsing errors are usage errors (exit 2), not failures.
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usage(err) })
	root.AddCommand(
		newVersionCmd(),
		newInventoryCmd(),
		newPreflightCmd(s),
		newInitCmd(s),
		newPlanCmd(s),
		newAddNodeCmd(s),
		newUpgradeCmd(s),
		newStatusCmd(s),
		newKubeflowCmd(s),
		newResetCmd(s),
		newCompletionCmd(),
	)
	return root
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
