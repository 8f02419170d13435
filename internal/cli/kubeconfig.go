package cli

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/gpukit/gpukit/pkg/kube"
)

// kubeFlags are --kubeconfig and --context, as kubectl has them: through
// cli-runtime's ConfigFlags and client-go's loading rules, so that a
// kubeconfig is found as kubectl finds it (--kubeconfig, else $KUBECONFIG's
// colon-separated files merged, else ~/.kube/config). Every command that
// talks to a cluster's API takes them, and picks its API in kubeFlags.api.
type kubeFlags struct {
	cf *genericclioptions.ConfigFlags
}

func (k *kubeFlags) addFlags(cmd *cobra.Command) {
	// Only these two of kubectl's flags: the others (--server, --token,
	// ...) would be flags that no command here honours.
	k.cf = &genericclioptions.ConfigFlags{KubeConfig: new(string), Context: new(string)}
	k.cf.AddFlags(cmd.Flags())
	f := cmd.Flags()
	f.Lookup("kubeconfig").Usage = "reach the cluster's API from this machine with this kubeconfig, instead of through the inventory's first control plane " +
		"(without -i: default $KUBECONFIG, else ~/.kube/config)"
	f.Lookup("context").Usage = "the kubeconfig context to use (default: its current context); implies reaching the API from this machine"
	_ = cmd.MarkFlagFilename("kubeconfig")
	_ = cmd.RegisterFlagCompletionFunc("context", k.completeContexts)
}

// chosen reports whether the user chose a kubeconfig on this machine:
// --kubeconfig or --context. With an inventory and neither, the API is
// reached through its first control plane; $KUBECONFIG alone does not
// redirect a command about the inventory's cluster to whatever cluster
// the shell last pointed kubectl at.
func (k *kubeFlags) chosen() bool {
	return k.cf != nil && (*k.cf.KubeConfig != "" || *k.cf.Context != "")
}

// flag names the flag that chose the kubeconfig, for messages.
func (k *kubeFlags) flag() string {
	if *k.cf.KubeConfig != "" {
		return "--kubeconfig"
	}
	return "--context"
}

// api is where a command reaches the cluster's API from: nil when it goes
// through the inventory's first control plane (an inventory given, no
// kubeconfig chosen), else the chosen context's kubeconfig, self-contained,
// and its cluster's name. A kubeconfig that cannot be found or used, or a
// context it does not have, is a usage error.
func (k *kubeFlags) api(inventory string) (raw []byte, cluster string, err error) {
	if inventory != "" && !k.chosen() {
		return nil, "", nil
	}
	raw, cluster, err = kube.LoadKubeconfig(k.cf.ToRawKubeConfigLoader(), *k.cf.Context)
	if err == nil {
		return raw, cluster, nil
	}
	var ce *kube.ContextError
	switch {
	case errors.Is(err, kube.ErrNoKubeconfig) && !k.chosen():
		err = fmt.Errorf("no cluster: pass -i FILE (the inventory of a cluster gpukit built), --kubeconfig PATH or --context NAME (%w)", err)
	case errors.As(err, &ce) && *k.cf.Context != "":
		err = fmt.Errorf("--context: %w", err)
	case errors.As(err, &ce):
		err = fmt.Errorf("%w: pass --context NAME", err)
	case *k.cf.KubeConfig != "":
		err = fmt.Errorf("--kubeconfig %s: %w", *k.cf.KubeConfig, err)
	default:
		err = fmt.Errorf("kubeconfig: %w", err)
	}
	return nil, "", usage(err)
}

// completeContexts completes --context with the contexts of the
// kubeconfig the flags and $KUBECONFIG name.
func (k *kubeFlags) completeContexts(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	cfg, err := k.cf.ToRawKubeConfigLoader().RawConfig()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []string
	for _, name := range slices.Sorted(maps.Keys(cfg.Contexts)) {
		if strings.HasPrefix(name, toComplete) {
			out = append(out, name)
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}
