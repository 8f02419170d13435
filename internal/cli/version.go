package cli

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/gpukit/gpukit/internal/version"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/ui"
)

func newVersionCmd() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print gpukit's version and the component versions it installs by default",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			o, err := decideOutput(cmd.OutOrStdout(), output)
			if err != nil {
				return err
			}
			info := version.Get()
			defaults := inventory.Defaults()
			out := o.W
			if o.Format == ui.FormatJSON {
				m := map[string]string{}
				for _, d := range defaults {
					m[d.Path] = d.Value
				}
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				return enc.Encode(struct {
					version.Info
					Defaults map[string]string `json:"defaults"`
				}{info, m})
			}
			fmt.Fprintf(out, "gpukit %s\ncommit: %s\n", info.Version, info.Commit)
			if info.Date != "" {
				fmt.Fprintf(out, "built: %s\n", info.Date)
			}
			fmt.Fprintf(out, "go: %s %s\n\ndefaults:\n", info.GoVersion, info.Platform)
			for _, d := range defaults {
				fmt.Fprintf(out, "  %-32s %s\n", d.Path, d.Value)
			}
			return nil
		},
	}
	addOutputFlag(cmd.Flags(), &output)
	return cmd
}
