package cli

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/gpukit/gpukit/pkg/inventory/ansible"
)

type importOptions struct {
	from      string
	format    string
	name      string
	output    string
	groupVars []string
	hostVars  []string
}

func newInventoryImportCmd() *cobra.Command {
	var o importOptions
	cmd := &cobra.Command{
		Use:   "import --from ansible|kubekey FILE",
		Short: "Convert a DeepOps / Kubespray / Cloud Native Stack Ansible inventory or a KubeKey v4 Inventory",
		Long: `Convert an Ansible inventory (INI or YAML) into a gpukit inventory. Groups map to
roles (kube_control_plane/kube-master -> control-plane, kube_node -> worker, ...),
ansible_host/ansible_user/ansible_port/ansible_ssh_private_key_file to SSH settings,
and known group variables (kube_version, kube_pods_subnet, ...) to versions and network.
group_vars/ and host_vars/ directories beside FILE are read as Ansible reads them.
A KubeKey v4 Inventory (apiVersion kubekey.kubesphere.io/v1, kind Inventory) is
Ansible's model too and converts the same way: its connector host/port/user/
password/private_key are the SSH settings, kube_worker is worker. Other files with
an apiVersion (a KubeKey v3 Cluster, a k0sctl file, a gpukit inventory) are refused.
Everything that could not be mapped is listed in the output's header and on stderr.
Passwords are never copied: they become environment variable references.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runImport(cmd, o, args[0])
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.from, "from", "", "source format: ansible (which reads KubeKey v4 Inventories too), or kubekey to require one")
	f.StringVar(&o.format, "format", "auto", "Ansible inventory syntax: ini, yaml or auto")
	f.StringVar(&o.name, "name", "", "cluster name (metadata.name)")
	f.StringVar(&o.output, "output-file", "", "write the inventory here instead of stdout")
	f.StringArrayVar(&o.groupVars, "group-vars", nil, "extra group_vars file (GROUP.yml, or GROUP=FILE); repeatable")
	f.StringArrayVar(&o.hostVars, "host-vars", nil, "extra host_vars file (HOST.yml, or HOST=FILE); repeatable")
	_ = cmd.MarkFlagRequired("from")
	return cmd
}

func runImport(cmd *cobra.Command, o importOptions, file string) error {
	switch o.from {
	case "ansible", "kubekey":
	default:
		return usage(fmt.Errorf("--from %q: the only source format is ansible (KubeKey v4 Inventories included; --from kubekey accepts only those)", o.from))
	}
	format, err := ansible.ParseFormat(o.format)
	if err != nil {
		return usage(err)
	}
	in, err := ansible.ReadFiles(file, o.groupVars, o.hostVars)
	if err != nil {
		return usage(err)
	}
	in.Format, in.ClusterName = format, o.name
	res, err := ansible.Convert(in)
	if err != nil {
		return usage(err)
	}
	if o.from == "kubekey" && res.Source != ansible.SourceKubeKey {
		return usage(fmt.Errorf("%s: --from kubekey: not a KubeKey v4 Inventory (apiVersion kubekey.kubesphere.io/v1, kind Inventory) but an Ansible inventory; convert it with --from ansible",
			file))
	}
	out := ansible.Render(res)
	stderr := cmd.ErrOrStderr()
	for _, n := range res.Notes {
		fmt.Fprintf(stderr, "note: %s\n", n)
	}
	// Convert already ran the result through the loader; its findings are
	// among the notes above.
	if !res.Valid {
		fmt.Fprintln(stderr, "the converted inventory needs editing before use: the notes above say what to fix")
	}
	if o.output == "" {
		_, err = cmd.OutOrStdout().Write(out)
		return err
	}
	if err := os.WriteFile(o.output, out, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "wrote %s (%d host entries, %d note(s))\n", o.output, len(res.Cluster.Spec.Hosts), len(res.Notes))
	return nil
}
