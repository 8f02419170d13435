package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpukit/gpukit/pkg/inventory"
)

func newInventoryCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "inventory",
		Short: "Write, check and convert inventory files",
	}
	cmd.AddCommand(newInventoryValidateCmd(), newInventoryExampleCmd(), newInventorySchemaCmd(), newInventoryImportCmd())
	return cmd
}

// loadInventory loads and validates the inventory; every problem with the
// file is a usage error (exit 2) because nothing may run on bad input.
func loadInventory(path string) (*inventory.Inventory, error) {
	return loadInventoryWith(path, inventory.Overrides{})
}

// loadInventoryWith is loadInventory with versions from the command line.
func loadInventoryWith(path string, o inventory.Overrides) (*inventory.Inventory, error) {
	return parseInventoryWith(path, nil, o)
}

// readInventory reads the inventory file once, for a command that needs its
// bytes too (upgrade driver: the cluster's name before the overrides, and
// --write-inventory's check).
func readInventory(path string) ([]byte, error) {
	if path == "" {
		return nil, usage(errors.New("no inventory: pass -i FILE (gpukit inventory example writes one)"))
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, usage(fmt.Errorf("read inventory: %w", err))
	}
	defer f.Close()
	// One byte over the limit is enough for the parser to refuse it.
	data, err := io.ReadAll(io.LimitReader(f, inventory.MaxFileSize+1))
	if err != nil {
		return nil, usage(fmt.Errorf("read inventory: %w", err))
	}
	return data, nil
}

// parseInventoryWith parses data read from path (nil: reads path).
func parseInventoryWith(path string, data []byte, o inventory.Overrides) (*inventory.Inventory, error) {
	if path == "" {
		return nil, usage(errors.New("no inventory: pass -i FILE (gpukit inventory example writes one)"))
	}
	var (
		inv *inventory.Inventory
		err error
	)
	if data != nil {
		inv, err = inventory.ParseWith(path, data, o)
	} else {
		inv, err = inventory.LoadWith(path, o)
	}
	if err != nil {
		var ve *inventory.ValidationError
		if errors.As(err, &ve) {
			return nil, usage(fmt.Errorf("%s: %d error(s):\n%w", path, len(ve.Issues), err))
		}
		return nil, usage(err)
	}
	return inv, nil
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
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			inv, err := loadInventory(path)
			if err != nil {
				return err
			}
			printWarnings(cmd.ErrOrStderr(), inv)
			writeSummary(cmd.OutOrStdout(), inv)
			return nil
		},
	}
	cmd.Flags().StringVarP(&path, "inventory", "i", "", "inventory file")
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
		Use:   "example",
		Short: "Print an annotated example inventory",
		Args:  exactArgs(0),
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
