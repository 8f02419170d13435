package cli

import (
	"bufio"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/gpukit/gpukit/internal/flow"
)

func newResetCmd(s Streams) *cobra.Command {
	o := &runOptions{}
	var hosts []string
	var yes bool
	cmd := &cobra.Command{
		Use:   "reset -i FILE [--hosts NAME,...]",
		Short: "Take hosts out of the swarm and undo gpukit's docker changes",
		Long: `The named hosts (--hosts; default: every host) leave the swarm, and the files gpukit
changed (/etc/docker/daemon.json, /etc/nvidia-container-runtime/config.toml) get back
what they held before gpukit first changed them; docker restarts only where a file
changed. With some hosts named, a manager that stays demotes the managers that leave,
first, and removes the nodes that left from its list, after. Packages (the Docker
engine, the NVIDIA stack) stay installed. Asks for confirmation unless --yes.

Exit code 0 when every host is reset, 3 when some failed, 2 on bad input or when
the reset was not confirmed (nothing changed).`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			l, err := o.load(s)
			if err != nil {
				return err
			}
			f, err := flow.NewReset(l.inv, hosts)
			if err != nil {
				return usage(err)
			}
			if !o.dryRun && !yes {
				if err := confirm(s, fmt.Sprintf("Reset %d host(s) (%s): they leave the swarm and docker's configuration goes back to what it was before gpukit.", len(f.Hosts), strings.Join(f.Hosts, ", "))); err != nil {
					return usage(err)
				}
			}
			sum, err := o.execute(cmd.Context(), s, l, f.Flow)
			if sum == nil {
				return err
			}
			return runError(err)
		},
	}
	o.addFlags(cmd.Flags())
	cmd.Flags().StringSliceVar(&hosts, "hosts", nil, "hosts to reset (comma-separated; default: every host)")
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "do not ask for confirmation")
	cmd.Flags().BoolVar(&o.dryRun, "dry-run", false, "show every write as the script that would run; change nothing")
	return cmd
}

// confirm asks on the terminal; without one, it refuses (pass --yes).
func confirm(s Streams, what string) error {
	f, ok := s.In.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return fmt.Errorf("%s\nnot confirmed: no terminal to ask on; pass --yes", what)
	}
	fmt.Fprintf(s.Err, "%s\nContinue? [y/N] ", what)
	line, _ := bufio.NewReader(f).ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return nil
	}
	return fmt.Errorf("not confirmed: nothing changed")
}
