package cli

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpukit/gpukit/pkg/inventory"
)

func newInventoryCmd() *cobra.Command {
	imp := newInventoryImportCmd()
	if imp.Example == "" { // an Example import.go sets itself wins
		imp.Example = `  gpukit inventory import --from ansible inventory/hosts.ini > cluster.yaml
  gpukit inventory import --from ansible hosts.yaml --name lab --output-file cluster.yaml
  gpukit inventory import --from ansible hosts.ini --group-vars k8s_cluster=group_vars/k8s_cluster.yml`
	}
	return group(&cobra.Command{
		Use:   "inventory",
		Short: "Write, check and convert inventory files",
		Example: `  gpukit inventory example > cluster.yaml
  gpukit inventory validate -i cluster.yaml`,
	}, newInventoryValidateCmd(), newInventoryExampleCmd(), newInventorySchemaCmd(), imp)
}

func printWarnings(w io.Writer, inv *inventory.Inventory) {
	for _, is := range inv.Warnings {
		fmt.Fprintf(w, "warning: %s\n", is)
	}
}

func newInventoryValidateCmd() *cobra.Command {
	var path string
	cmd := &cobra.Command{
		Use:   "validate -i FILE",
		Short: "Check an inventory and print a summary of it",
		Long: `Check an inventory file strictly: unknown fields, wrong types, duplicate hosts or
addresses, overlapping networks, incompatible versions and unsafe characters are all
reported at once, each with file:line:column and the field path. Exit code 2 when the
file is invalid. Nothing is contacted.`,
		Example: `  gpukit inventory validate -i cluster.yaml
  gpukit inventory validate -i cluster.yaml 2> problems.txt || echo "fix cluster.yaml"`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			// Every problem with the file is a usage error (exit 2): nothing
			// may run on bad input.
			inv, err := inventory.LoadFile(path, nil, inventory.Overrides{})
			if err != nil {
				return usage(err)
			}
			printWarnings(cmd.ErrOrStderr(), inv)
			writeSummary(cmd.OutOrStdout(), inv)
			return nil
		},
	}
	cmd.Flags().StringVarP(&path, "inventory", "i", "", "inventory file")
	_ = cmd.MarkFlagFilename("inventory", "yaml", "yml")
	return cmd
}

// writeSummary prints what an inventory describes: hosts by role and the
// versions that will be installed.
func writeSummary(w io.Writer, inv *inventory.Inventory) {
	spec := inv.Cluster.Spec
	fmt.Fprintf(w, "%s: valid\n", inv.File)
	fmt.Fprintf(w, "cluster %s: %s, %d host(s)\n", inv.Cluster.Metadata.Name, spec.Orchestrator, len(inv.Machines))
	byRole := map[inventory.Role][]string{}
	for _, m := range inv.Machines {
		for _, r := range m.Roles {
			byRole[r] = append(byRole[r], m.Name)
		}
	}
	roles := make([]string, 0, len(byRole))
	for r := range byRole {
		roles = append(roles, string(r))
	}
	sort.Strings(roles)
	for _, r := range roles {
		fmt.Fprintf(w, "  %-14s %4d  %s\n", r, len(byRole[inventory.Role(r)]), abbreviate(byRole[inventory.Role(r)], 6))
	}
	v := spec.Versions
	rt := v.ContainerRuntime
	if rt == "" && v.Runtime == inventory.RuntimeDocker {
		rt = inventory.DefaultDockerVersion + " (Debian: its docker.io)"
	}
	fmt.Fprintf(w, "versions: nvidia driver %s, cuda %s, container toolkit %s, %s %s", v.NvidiaDriver, v.CUDA,
		v.ContainerToolkit, v.Runtime, rt)
	if spec.Orchestrator == inventory.Kubernetes {
		fmt.Fprintf(w, ", kubernetes %s", v.Kubernetes)
	}
	fmt.Fprintln(w)
	if spec.Orchestrator == inventory.Kubernetes {
		fmt.Fprintf(w, "network: pods %s, services %s, cni %s\n", spec.Network.PodCIDR, spec.Network.ServiceCIDR, spec.Network.CNI)
	}
}

// abbreviate keeps summaries of 1000-host clusters to one line.
func abbreviate(names []string, max int) string {
	if len(names) <= max {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s, ... %s", strings.Join(names[:max-1], ", "), names[len(names)-1])
}

func newInventoryExampleCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "example",
		Short:   "Print an annotated example inventory",
		Example: "  gpukit inventory example > cluster.yaml",
		Args:    exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := cmd.OutOrStdout().Write(inventory.Example())
			return err
		},
	}
}

func newInventorySchemaCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "schema",
		Short: "Print the JSON Schema of the inventory format",
		Long: `Print the JSON Schema (draft 2020-12) of the inventory format, for editor
completion (yaml-language-server) and CI linting.`,
		Example: `  gpukit inventory schema > gpukit.schema.json
  # then, first line of cluster.yaml:
  # yaml-language-server: $schema=./gpukit.schema.json`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			b, err := inventory.Schema()
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "%s\n", b)
			return err
		},
	}
}
