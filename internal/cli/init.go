package cli

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gpukit/gpukit/internal/flow"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/ui"
)

// initOptions are the flags of init and plan.
type initOptions struct {
	runOptions
	maxParallelReboots int
	rebootTimeout      time.Duration
	kubeconfigOut      string
	credentialsOut     string
	mergeKubeconfig    bool
	// bundleBinary is --gpukit-binary: what a bundle host runs.
	bundleBinary string
}

// addBundleFlags is --gpukit-binary, for the bundle host of spec.bundle.
func (o *initOptions) addBundleFlags(cmd *cobra.Command) {
	cmd.Flags().StringVar(&o.bundleBinary, "gpukit-binary", "", "with spec.bundle: the gpukit executable the bundle host runs (linux, its architecture; default: this one)")
}

// initOptions is init's flow options.
func (o *initOptions) flowOptions() flow.InitOptions {
	return flow.InitOptions{NVIDIA: o.nvidiaOptions(), BundleBinary: gpukitBinary(o.bundleBinary)}
}

// gpukitBinary is the executable given, else this one.
func gpukitBinary(given string) string {
	if given != "" {
		return given
	}
	self, err := os.Executable()
	if err != nil {
		return ""
	}
	return self
}

// defaultMaxParallelReboots is --max-parallel-reboots' default.
const defaultMaxParallelReboots = 16

// addVersionFlags are --driver, --cuda and --toolkit: the versions to
// install instead of the inventory's.
func (o *initOptions) addVersionFlags(f *pflag.FlagSet) {
	f.StringVar(&o.overrides.NvidiaDriver.Value, "driver", "", "NVIDIA driver release or branch, instead of spec.versions.nvidiaDriver")
	f.StringVar(&o.overrides.CUDA.Value, "cuda", "", "CUDA toolkit X.Y, instead of spec.versions.cuda")
	f.StringVar(&o.overrides.ContainerToolkit.Value, "toolkit", "", "NVIDIA Container Toolkit X.Y.Z, instead of spec.versions.containerToolkit")
	o.overrides.NvidiaDriver.Flag, o.overrides.CUDA.Flag, o.overrides.ContainerToolkit.Flag = "--driver", "--cuda", "--toolkit"
}

// addRebootFlags are the flags of commands that may reboot hosts (plan
// reboots none). Without them a run takes their defaults.
func (o *initOptions) addRebootFlags(f *pflag.FlagSet) {
	f.IntVar(&o.maxParallelReboots, "max-parallel-reboots", defaultMaxParallelReboots, "hosts rebooting at once, at most")
	f.DurationVar(&o.rebootTimeout, "reboot-timeout", 0, "how long a host may take to come back from a reboot (default spec.nvidia.rebootTimeout)")
}

// addKubeconfigOutFlags are the flags of the command that builds a cluster
// and writes its admin kubeconfig (init).
func (o *initOptions) addKubeconfigOutFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&o.kubeconfigOut, "kubeconfig-out", "", "where the cluster's admin kubeconfig is written, mode 0600 (kubernetes; default ./<cluster name>.kubeconfig)")
	f.StringVar(&o.credentialsOut, "credentials-out", "", "where the logins the platform generates (Grafana's) are written, mode 0600 (kubernetes; default ./<cluster name>.credentials)")
	f.BoolVar(&o.mergeKubeconfig, "merge-kubeconfig", false, "also merge the admin kubeconfig into $KUBECONFIG (its first file) or ~/.kube/config as context <cluster>-admin@<cluster>, made current (kubernetes)")
	_ = cmd.MarkFlagFilename("kubeconfig-out")
	_ = cmd.MarkFlagFilename("credentials-out")
}

const initLong = `Build the cluster on every host of the inventory, layer by layer:
preflight (it stops the run before anything changes when a host is not ready), then
the NVIDIA stack: kernel headers and DKMS for the running kernel, nouveau off, the
driver at the wanted version from NVIDIA's CUDA repository (or a mirror, or the
distribution's packages) held against unattended upgrades, the fabric manager on
NVSwitch systems, persistence mode, the CUDA toolkit where asked, the container
toolkit; a reboot only where the new driver needs one; then nvidia-smi verifies
every GPU. With spec.orchestrator: swarm, then Docker Swarm: the Docker engine
(Debian's docker.io on Debian, Docker's repository or spec.mirrors.docker on
Ubuntu and RHEL) pinned and held, the NVIDIA runtime as docker's default with every
GPU advertised as a NVIDIA-GPU generic resource (merged into daemon.json, the
user's other settings kept), the swarm on the first manager, the other managers
one at a time, the workers in parallel, node labels from the facts and the
inventory. With spec.orchestrator: kubernetes (the default), then a kubeadm cluster:
swap off, the overlay and br_netfilter modules and sysctls; kubeadm, kubelet and
kubectl from the minor's package repository (pkgs.k8s.io or spec.mirrors.kubernetes),
pinned and held; containerd (Docker's containerd.io, or the distribution's)
configured for the installed major with the NVIDIA runtime on GPU hosts and
spec.mirrors.registry as every public registry's mirror; kubeadm init on the first
control plane, the other control planes one at a time, the workers in parallel; the
admin kubeconfig written to ./<cluster>.kubeconfig (mode 0600; --merge-kubeconfig
also merges it into yours); then through the API: node labels from the GPU facts
and the inventory, its taints; the pod network (spec.network.cni: flannel, calico,
cilium or none) and NVIDIA's device plugin with GPU and node feature discovery,
each a Helm release from its repository or spec.mirrors.charts.

Every step checks the host first: a second run on a converged cluster changes
nothing and says so (hosts changed / unchanged / failed). A host that fails is
named and the others finish; run again to continue.

Exit code 0 when every host is done, 3 when some failed, 2 on bad input (nothing
changed on any host).`

func newInitCmd(s Streams) *cobra.Command {
	o := &initOptions{}
	cmd := &cobra.Command{
		Use:   "init -i FILE",
		Short: "Install the NVIDIA stack on every host, then the orchestrator (kubeadm Kubernetes or Docker Swarm)",
		Long:  initLong + "\n\n--dry-run (or gpukit plan) probes the hosts and shows every write as the exact script that would run, changing nothing.",
		Example: `  gpukit init -i cluster.yaml
  gpukit init -i cluster.yaml --driver 580 --cuda 13.0 --merge-kubeconfig
  gpukit init -i cluster.yaml --only-phases nvidia/driver,nvidia/verify
  gpukit init -i cluster.yaml --dry-run -o json > plan.jsonl`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(cmd, s)
		},
	}
	o.runOptions.addFlags(cmd, honours{writes: true, fanOut: true})
	o.addVersionFlags(cmd.Flags())
	o.addRebootFlags(cmd.Flags())
	o.addKubeconfigOutFlags(cmd)
	o.addBundleFlags(cmd)
	o.phaseFlags(cmd, o.initFlow)
	cmd.Flags().BoolVar(&o.dryRun, "dry-run", false, "probe the hosts and show every write as the script that would run; change nothing")
	return cmd
}

func newPlanCmd(s Streams) *cobra.Command {
	// plan reboots no host and writes no kubeconfig: it has neither's
	// flags, and runs with init's defaults.
	o := &initOptions{maxParallelReboots: defaultMaxParallelReboots}
	o.dryRun = true
	cmd := &cobra.Command{
		Use:   "plan -i FILE",
		Short: "Show what init would do on every host, changing nothing (init --dry-run)",
		Long: `Connect to every host, probe it, and show per host every write gpukit init would make,
as the exact script that would run (secrets redacted). Nothing is changed. Use -v to print
the scripts on a terminal or in plain output; -o json carries them in "planned" events.`,
		Example: `  gpukit plan -i cluster.yaml
  gpukit plan -i cluster.yaml --driver 590 -v
  gpukit plan -i cluster.yaml --only-phases nvidia -o json`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(cmd, s)
		},
	}
	o.runOptions.addFlags(cmd, honours{fanOut: true})
	o.addVersionFlags(cmd.Flags())
	o.addBundleFlags(cmd)
	o.phaseFlags(cmd, o.initFlow)
	return cmd
}

// initFlow is init's (and plan's) flow, for --list-phases.
func (o *initOptions) initFlow(inv *inventory.Inventory) (flow.Flow, error) {
	f := flow.NewInit(inv, o.flowOptions())
	if o.dryRun {
		f.Name = "gpukit plan"
	}
	return f.Flow, nil
}

// checkFlags refuses flag values no run can use (exit 2).
func (o *initOptions) checkFlags() error {
	if o.maxParallelReboots < 1 {
		return usage(fmt.Errorf("--max-parallel-reboots %d: want 1 or more", o.maxParallelReboots))
	}
	if o.rebootTimeout < 0 {
		return usage(fmt.Errorf("--reboot-timeout %s: want a positive duration", o.rebootTimeout))
	}
	return nil
}

func (o *initOptions) run(cmd *cobra.Command, s Streams) error {
	if o.list {
		return o.printPhases(s)
	}
	if err := o.checkFlags(); err != nil {
		return err
	}
	l, err := o.load(s)
	if err != nil {
		return err
	}
	f := flow.NewInit(l.inv, o.flowOptions())
	if l.inv.Cluster.Spec.Kubeflow.Enabled {
		if err := flow.CheckKubeflowSources(l.inv, flow.KubeflowOptions{}); err != nil {
			return usage(err)
		}
	}
	if o.dryRun {
		f.Name = "gpukit plan"
	}
	res, err := o.executeAfterPreflight(cmd.Context(), s, l, f.Preflight, false)
	if res == nil {
		return err
	}
	keep := func(werr error) {
		if werr != nil && err == nil {
			err = werr
		}
	}
	if f.Kube != nil && !o.dryRun {
		if kc := f.Kube.Kubeconfig(); kc != nil {
			path := cmp.Or(o.kubeconfigOut, l.inv.Cluster.Metadata.Name+".kubeconfig")
			keep(writeKubeconfig(l.out, path, kc))
			res.Files.Kubeconfig = path
			if o.mergeKubeconfig {
				keep(o.merge(l, kc, res))
			}
		}
	}
	if !o.dryRun {
		if creds := f.Credentials(); len(creds) > 0 {
			path := cmp.Or(o.credentialsOut, l.inv.Cluster.Metadata.Name+".credentials")
			keep(writeCredentials(l.out, path, creds))
			res.Files.Credentials = path
		}
	}
	keep(writeResult(l.out, res))
	return err
}

// merge puts the admin kubeconfig into the user's kubeconfig and says so
// (-o json: in res).
func (o *initOptions) merge(l *loaded, kc []byte, res *flow.InitResult) error {
	m, err := flow.MergeKubeconfig(l.inv.Cluster.Metadata.Name, kc)
	if err != nil {
		return fmt.Errorf("--merge-kubeconfig: %w", err)
	}
	res.Files.Merged = m
	if l.out.Format == ui.FormatJSON {
		return nil
	}
	_, err = fmt.Fprintf(l.out.W, "Merged into %s as context %s (current): kubectl get nodes\n", m.Path, m.Context)
	return err
}

// writeKubeconfig writes the admin kubeconfig (mode 0600, replacing the
// file whole) and says where it is and how to use it.
func writeKubeconfig(out ui.Output, path string, kc []byte) error {
	if err := writePrivate(path, kc); err != nil {
		return fmt.Errorf("admin kubeconfig: %w", err)
	}
	if out.Format == ui.FormatJSON {
		return nil // the result names it
	}
	_, err := fmt.Fprintf(out.W, "\nThe cluster's admin kubeconfig is %s (mode 0600): kubectl --kubeconfig %s get nodes\n", path, path)
	return err
}

// executeAfterPreflight runs init's (add=false) or add-node's flow, which
// starts with preflight's phases: a run stopped there says which checks
// failed, as preflight does. res is nil when nothing ran (bad input).
func (o *initOptions) executeAfterPreflight(ctx context.Context, s Streams, l *loaded, f *flow.Preflight, add bool) (res *flow.InitResult, err error) {
	sum, err := o.execute(ctx, s, l, f.Flow)
	if sum == nil {
		return nil, err
	}
	res = f.InitResult(sum, add, o.dryRun)
	if res.Stopped {
		if werr := writePreflightReport(l.out, f.Report(sum), o.verbose); werr != nil {
			return res, werr
		}
	}
	return res, runError(err)
}
