package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/ui"
)

func newCompletionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "completion bash|zsh|fish|powershell",
		Short: "Print a shell completion script",
		Long: `Print a shell completion script. It completes the commands and flags, the values
of -o, the phases of --only-phases and --skip-phases, the hosts of --hosts (from the
inventory given with -i) and the contexts of --context (from the kubeconfig).`,
		Example: `  source <(gpukit completion bash)
  gpukit completion zsh > "${fpath[1]}/_gpukit"
  gpukit completion fish > ~/.config/fish/completions/gpukit.fish`,
		ValidArgs: []string{"bash", "zsh", "fish", "powershell"},
		Args:      exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			out := cmd.OutOrStdout()
			root := cmd.Root()
			switch args[0] {
			case "bash":
				return root.GenBashCompletionV2(out, true)
			case "zsh":
				return root.GenZshCompletion(out)
			case "fish":
				return root.GenFishCompletion(out, true)
			case "powershell":
				return root.GenPowerShellCompletionWithDesc(out)
			}
			return usage(fmt.Errorf("unknown shell %q: want bash, zsh, fish or powershell", args[0]))
		},
	}
}

// completeOutput completes -o with the formats ui.ParseFormat takes.
func completeOutput(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	var out []string
	for _, f := range []string{
		string(ui.FormatAuto) + "\tlive view on a terminal, plain otherwise",
		string(ui.FormatPlain) + "\tone line per event",
		string(ui.FormatJSON) + "\tone JSON object per line",
	} {
		if strings.HasPrefix(f, toComplete) {
			out = append(out, f)
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// completeHosts completes --hosts with the host names of the inventory
// typed with -i (nothing without it, or when it does not load).
func (o *runOptions) completeHosts(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	if o.inventory == "" {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	inv, err := inventory.LoadFile(o.inventory, nil, inventory.Overrides{})
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	names := make([]string, len(inv.Machines))
	for i, m := range inv.Machines {
		names[i] = m.Name
	}
	return completeList(toComplete, names)
}

// completeList completes the last name of a comma-separated list, keeping
// the names typed before it.
func completeList(toComplete string, names []string) ([]string, cobra.ShellCompDirective) {
	done, last := "", toComplete
	if i := strings.LastIndex(toComplete, ","); i >= 0 {
		done, last = toComplete[:i+1], toComplete[i+1:]
	}
	var out []string
	for _, n := range names {
		if strings.HasPrefix(n, last) {
			out = append(out, done+n)
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
}
