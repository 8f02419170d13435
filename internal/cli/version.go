package cli

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/gpukit/gpukit/internal/version"
	"github.com/gpukit/gpukit/pkg/inventory"
)

func newVersionCmd() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print gpukit's version and the component versions it installs by default",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			info := version.Get()
			defaults := inventory.Defaults()
			out := cmd.OutOrStdout()
			switch output {
			case "json":
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
			case "", "text":
				fmt.Fprintf(out, "gpukit %s\ncommit: %s\n", info.Version, info.Commit)
				if info.Date != "" {
					fmt.Fprintf(out, "built: %s\n", info.Date)
				}
				fmt.Fprintf(out, "go: %s %s\n\ndefaults:\n", info.GoVersion, info.Platform)
				for _, d := range defaults {
					fmt.Fprintf(out, "  %-32s %s\n", d.Path, d.Value)
				}
				return nil
			default:
				return usage(fmt.Errorf("--output %q: want text or json", output))
			}
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "text", "text or json")
	return cmd
}
