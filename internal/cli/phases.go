package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpukit/gpukit/internal/flow"
	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/ui"
)

// flowOf builds a command's flow for an inventory with the command's
// default choices: what --list-phases prints and the phase names the
// shell completes. Every command that runs phases sets one, so that the
// list a user reads is built by the code that runs, never written twice.
type flowOf func(inv *inventory.Inventory) (flow.Flow, error)

// phaseFlags gives a command that runs phases --list-phases and the
// completion of --only-phases and --skip-phases, from flow.
func (o *runOptions) phaseFlags(cmd *cobra.Command, flow flowOf) {
	o.flowOf = flow
	cmd.Flags().BoolVar(&o.list, "list-phases", false, "print the command's phases in the order they run (from -i FILE, else the example inventory) and exit; nothing is contacted")
	for _, name := range []string{flagOnlyPhases, flagSkipPhases} {
		_ = cmd.RegisterFlagCompletionFunc(strings.TrimPrefix(name, "--"), o.completePhases)
	}
}

// printPhases prints the command's phases, nested ones indented under their
// rollout, and changes nothing anywhere.
func (o *runOptions) printPhases(s Streams) error {
	out, err := decideOutput(s.Out, o.output)
	if err != nil {
		return err
	}
	l, err := flow.List(o.inventory, o.overrides, o.flowOf)
	if err != nil {
		return err
	}
	return writePhaseList(out, l)
}

func writePhaseList(out ui.Output, l *flow.Listing) error {
	res := l.Result()
	if out.Format == ui.FormatJSON {
		return writeResult(out, res)
	}
	from := l.File
	if from == "" {
		from = "the example inventory (gpukit inventory example; -i FILE for yours)"
	}
	fmt.Fprintf(out.W, "%s: the phases, in the order they run (spec.orchestrator: %s, from %s)\n",
		res.Command, res.Orchestrator, from)
	writeListed(out.W, res.Phases, 0, nameWidth(res.Phases, 0))
	fmt.Fprintf(out.W, "\n--only-phases and --skip-phases take a phase or a group (%s).\n", groupExample(res.Phases))
	return nil
}

func nameWidth(phases []engine.Listed, depth int) int {
	w := 0
	for _, p := range phases {
		w = max(w, 2*depth+len(p.Name), nameWidth(p.Phases, depth+1))
	}
	return w
}

func writeListed(w io.Writer, phases []engine.Listed, depth, width int) {
	for _, p := range phases {
		name := strings.Repeat("  ", depth) + p.Name
		fmt.Fprintf(w, "  %-*s  %s\n", width, name, p.Title)
		if len(p.Phases) > 0 {
			writeListed(w, p.Phases, depth+1, width)
		}
	}
}

// groupExample is the first phase's group ("preflight" for
// "preflight/facts"), to show that a prefix selects a group.
func groupExample(phases []engine.Listed) string {
	for _, p := range phases {
		if g, _, ok := strings.Cut(p.Name, "/"); ok {
			return fmt.Sprintf("%s = every %s/... phase", g, g)
		}
	}
	return "a name's prefix"
}

// completePhases completes --only-phases and --skip-phases with the
// command's phase names and groups, from -i FILE when it is typed already.
func (o *runOptions) completePhases(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	l, err := flow.List(o.inventory, o.overrides, o.flowOf)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return completeList(toComplete, engine.PhaseNames(l.Flow.Phases))
}
