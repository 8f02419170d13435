package cli

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/gpukit/gpukit/internal/flow"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/ui"
	"github.com/gpukit/gpukit/pkg/upgrade"
)

func newUpgradeCmd(s Streams) *cobra.Command {
	return group(&cobra.Command{
		Use:     "upgrade",
		Short:   "Upgrade a layer of a running cluster",
		Example: "  gpukit upgrade driver -i cluster.yaml --driver 590 --max-unavailable 10%",
	}, newUpgradeDriverCmd(s), newUpgradeKubernetesCmd(s))
}

// upgradeOptions are upgrade driver's flags.
type upgradeOptions struct {
	initOptions
	maxUnavailable     string
	selector           string
	canary             int
	waitForJobs        time.Duration
	force              bool
	continueOnFailure  bool
	resume             bool
	statePath          string
	kube               kubeFlags
	writeInventory     bool
	drainTimeout       time.Duration
	gracePeriod        time.Duration
	deleteEmptyDirData bool
	gpuTimeout         time.Duration
	skipEtcdSnapshot   bool
	// mig: `gpukit mig apply`, the rollout of the inventory's MIG layouts.
	mig bool
	// kubernetes: `gpukit upgrade kubernetes` to version.
	kubernetes bool
	version    string
}

const upgradeDriverLong = `Upgrade the NVIDIA driver (and, with --cuda and --toolkit, the CUDA toolkit and the
container toolkit) on the GPU nodes of a running Kubernetes cluster or Docker Swarm, a
wave at a time.

Kubernetes: before the first node, an etcd snapshot is taken on the first control plane
(its path is reported). Then, per node: cordon (marked as gpukit's); training workloads
(pods using nvidia.com/gpu owned by a Job or a training CRD such as PyTorchJob or
TrainJob, or annotated gpukit.dev/training=true) get their checkpoint hook
(gpukit.dev/checkpoint: signal:SIGUSR1 or exec:COMMAND), are waited for up to
--wait-for-jobs, and otherwise the node is handed back untouched and reported - never
evicted unless --force; other pods are drained through their PodDisruptionBudgets and
grace periods (kubectl drain).

Swarm: through the first manager's docker, the node is paused (marked as gpukit's);
training tasks (tasks using NVIDIA-GPU of a replicated-job or global-job service, or
labelled gpukit.dev/training=true on the service or container) get their hook (the same
labels: a signal sent with docker kill, or a command run with docker exec), are waited
for or the node is handed back; then availability drain, and the upgrade waits until
none of the node's tasks runs (each service's own stop grace period applies).

Then, on both: no process may be computing on the GPUs outside the orchestrator; the
persistence daemon, the fabric manager and DCGM stop; the driver packages are unheld,
installed at the new release and held again; a reboot only where the new driver needs
one; nvidia-smi verifies every GPU and the version (swarm: docker's NVIDIA runtime
configuration checked again); the GPUs are advertised again (the device plugin
restarted; a swarm node's NVIDIA-GPU resources); the driver labels follow; uncordon
(swarm: availability active - global services come back, pending tasks may land).

Never more than --max-unavailable GPU nodes (a number, or a percentage of the GPU
nodes) are out of service at once, counting nodes that failed (they stay cordoned)
and nodes someone else cordoned, paused or drained (those are left alone unless named
with --hosts). The host the cluster is reached through is upgraded last, alone. A
node that fails stops the rollout (--continue-on-failure goes on). The rollout's
state is kept in ~/.gpukit/upgrades/<cluster>.driver.json (0600; --state): after
Ctrl-C, a crash, or a fix, --resume goes on where it stopped without redoing finished
nodes. Every node already at the asked versions is left alone: a second run changes
nothing.

The inventory's spec.versions stay the source of truth: the command says how to
record the new versions, or rewrites them in the file with --write-inventory.

Exit code 0 when every node is done, 3 when some failed or were left alone, 2 on bad
input (nothing changed on any host).`

func newUpgradeDriverCmd(s Streams) *cobra.Command {
	o := &upgradeOptions{}
	cmd := &cobra.Command{
		Use:   "driver -i FILE --driver VERSION",
		Short: "Rolling, drain-aware, training-safe upgrade of the NVIDIA driver on the GPU nodes",
		Long:  upgradeDriverLong,
		Example: `  gpukit upgrade driver -i cluster.yaml --driver 590 --dry-run
  gpukit upgrade driver -i cluster.yaml --driver 590.48.01 --canary 1 --max-unavailable 10%
  gpukit upgrade driver -i cluster.yaml --driver 590 --hosts gpu-001,gpu-002 --wait-for-jobs 2h
  gpukit upgrade driver -i cluster.yaml --resume`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd, s) },
	}
	f := cmd.Flags()
	o.runOptions.addFlags(cmd, honours{writes: true, fanOut: true})
	o.addVersionFlags(f)
	o.addRebootFlags(f)
	f.BoolVar(&o.dryRun, "dry-run", false, "show the order of the nodes and each node's steps and scripts; change nothing")
	o.addRolloutFlags(cmd, "upgrade")
	f.BoolVar(&o.writeInventory, "write-inventory", false, "when every node is done, record the new versions in the inventory's spec.versions")
	f.BoolVar(&o.skipEtcdSnapshot, "skip-etcd-snapshot", false, "take no etcd snapshot before the first node")
	o.phaseFlags(cmd, func(inv *inventory.Inventory) (flow.Flow, error) {
		f, err := flow.NewUpgradeDriver(inv, flow.UpgradeOptions{NVIDIA: o.nvidiaOptions()})
		if err != nil {
			return flow.Flow{}, err
		}
		return f.Flow, nil
	})
	return cmd
}

const upgradeKubernetesLong = `Move a kubeadm cluster to another Kubernetes release: a patch of its minor, or the next
minor (skipping one is refused, naming the releases to take in turn; so is a downgrade).

First, on the first control plane: the API server's version is read and checked, kubeadm of
the new release is installed, and kubeadm upgrade plan is shown. Then an etcd snapshot
(/var/lib/gpukit/etcd-snapshots; --skip-etcd-snapshot). Then the control planes, one at a
time in the inventory's order, then the workers a wave at a time; no worker starts before
every control plane is done (a kubelet may not be newer than an API server). Per node: cordon,
training handled as upgrade driver does (checkpoint hook, --wait-for-jobs, never evicted
without --force; otherwise the node is handed back untouched), drain through
PodDisruptionBudgets; then kubeadm of the new release (unheld, installed, held), kubeadm
upgrade apply on the first control plane (the control plane's static pods, etcd, CoreDNS,
kube-proxy, the cluster's configuration) or kubeadm upgrade node elsewhere, containerd as the
release needs it (the sandbox image kubeadm names), kubelet and kubectl (unheld, installed,
held), the kubelet restarted; the node is given back once its kubelet reports the release and
it is Ready (with as many GPUs as before). After the last node: the pod network's and the
device plugin's releases as the bill of materials pins them.

Packages come from the new minor's repository (spec.mirrors.kubernetes), images through
the cluster's image repository: an air-gapped site mirrors the new release first (gpukit
bundle list with the new spec.versions.kubernetes names them).

Never more than --max-unavailable workers are out of service at once, counting those
that failed and those someone else cordoned. A node that fails stays cordoned and stops
the rollout (a control plane always). The state is kept in
~/.gpukit/upgrades/<cluster>.kubernetes.json (--state): after Ctrl-C, a crash or a fix,
--resume goes on where it stopped. A node already at the release is left alone: a second
run changes nothing. --write-inventory records spec.versions.kubernetes when every node
is done.

Exit code 0 when every node is done, 3 when some failed or were left alone, 2 on bad
input (nothing changed on any host).`

func newUpgradeKubernetesCmd(s Streams) *cobra.Command {
	o := &upgradeOptions{kubernetes: true}
	o.maxParallelReboots = defaultMaxParallelReboots // nothing reboots: no reboot flags
	cmd := &cobra.Command{
		Use:   "kubernetes -i FILE --version X.Y.Z",
		Short: "Rolling upgrade of the cluster's Kubernetes: control planes one at a time, then the workers",
		Long:  upgradeKubernetesLong,
		Example: `  gpukit upgrade kubernetes -i cluster.yaml --version 1.37.2 --dry-run
  gpukit upgrade kubernetes -i cluster.yaml --version 1.37.2 --max-unavailable 10% --wait-for-jobs 2h
  gpukit upgrade kubernetes -i cluster.yaml --resume`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd, s) },
	}
	f := cmd.Flags()
	o.runOptions.addFlags(cmd, honours{writes: true, fanOut: true})
	f.StringVar(&o.version, "version", "", "the Kubernetes release to move to, X.Y.Z (a patch of the cluster's minor, or the next minor)")
	f.BoolVar(&o.dryRun, "dry-run", false, "show the order of the nodes and each node's steps and scripts; change nothing")
	o.addRolloutFlags(cmd, "upgrade")
	f.BoolVar(&o.writeInventory, "write-inventory", false, "when every node is done, record the release in the inventory's spec.versions.kubernetes")
	f.BoolVar(&o.skipEtcdSnapshot, "skip-etcd-snapshot", false, "take no etcd snapshot before the first node")
	o.phaseFlags(cmd, func(inv *inventory.Inventory) (flow.Flow, error) {
		f, err := flow.NewUpgradeKubernetes(inv, flow.UpgradeOptions{})
		if err != nil {
			return flow.Flow{}, err
		}
		return f.Flow, nil
	})
	return cmd
}

// addRolloutFlags are the flags of a rolling change (upgrade driver, mig
// apply): the budget, the nodes, training safety, the drain, the state.
func (o *upgradeOptions) addRolloutFlags(cmd *cobra.Command, verb string) {
	f := cmd.Flags()
	kind, nodes := "driver", "GPU nodes"
	switch {
	case o.mig:
		kind = "mig"
	case o.kubernetes:
		kind, nodes = "kubernetes", "workers"
	}
	f.StringVar(&o.maxUnavailable, "max-unavailable", "1", nodes+" out of service at once, at most: N, or P% of the "+nodes)
	o.addHostsFlag(cmd, verb+" only these hosts (comma-separated inventory names), even if someone else cordoned them")
	f.StringVar(&o.selector, "selector", "", verb+" only the nodes with these labels (a label selector: gpu=h100,zone in (a,b))")
	f.IntVar(&o.canary, "canary", 0, verb+" this many nodes first; go on only if all of them verified")
	f.DurationVar(&o.waitForJobs, "wait-for-jobs", 0, "how long to wait for a node's training to finish before leaving the node alone")
	f.BoolVar(&o.force, "force", false, "evict training pods (after their checkpoint hook) and let the change end processes computing on the GPUs")
	f.BoolVar(&o.continueOnFailure, "continue-on-failure", false, "go on after a node fails (it stays cordoned and counts against --max-unavailable)")
	f.BoolVar(&o.resume, "resume", false, "continue the rollout that stopped (its versions, unless given again)")
	f.StringVar(&o.statePath, "state", "", "the rollout's state file (default ~/.gpukit/upgrades/<cluster>."+kind+".json)")
	o.kube.addFlags(cmd)
	f.DurationVar(&o.drainTimeout, "drain-timeout", 10*time.Minute, "how long a node's drain may take (PodDisruptionBudgets may hold it)")
	f.DurationVar(&o.gracePeriod, "grace-period", -1, "termination grace period for drained pods (default: each pod's own)")
	f.BoolVar(&o.deleteEmptyDirData, "delete-emptydir-data", false, "drain pods with emptyDir volumes too (their data is lost)")
	f.DurationVar(&o.gpuTimeout, "gpu-timeout", 5*time.Minute, "how long a node may take to advertise its GPUs again")
}

func (o *upgradeOptions) run(cmd *cobra.Command, s Streams) error {
	if o.list {
		return o.printPhases(s)
	}
	if err := o.checkFlags(); err != nil {
		return err
	}
	budget, err := upgrade.ParseBudget(o.maxUnavailable)
	if err != nil {
		return usage(fmt.Errorf("--max-unavailable %w", err))
	}
	var sel labels.Selector
	if o.selector != "" {
		if sel, err = labels.Parse(o.selector); err != nil {
			return usage(fmt.Errorf("--selector %q: %w", o.selector, err))
		}
	}
	switch {
	case o.canary < 0:
		return usage(fmt.Errorf("--canary %d: want 0 or more", o.canary))
	case o.waitForJobs < 0 || o.drainTimeout <= 0 || o.gpuTimeout <= 0:
		return usage(errors.New("--wait-for-jobs, --drain-timeout and --gpu-timeout: want positive durations"))
	case o.resume && o.dryRun:
		return usage(errors.New("--resume and --dry-run: a dry-run changes nothing, so there is nothing to resume"))
	}
	// The inventory, read once, and the rollout: a new one, or the one to
	// resume (its versions unless the flags give them again, and then they
	// must be its own).
	var r *flow.UpgradeRollout
	switch {
	case o.mig:
		r, err = flow.DecideMIG(o.inventory, o.statePath, o.resume, o.dryRun)
	case o.kubernetes:
		r, err = flow.DecideKubernetes(o.inventory, o.statePath, o.version, o.resume, o.dryRun)
	default:
		r, err = flow.DecideUpgrade(o.inventory, o.statePath, o.resume, o.dryRun, o.overrides)
	}
	if err != nil {
		return err
	}
	o.data, o.overrides = r.Data, r.Versions
	if o.overrides.NvidiaDriver.Value == "" && !o.mig && !o.kubernetes {
		return usage(errors.New("--driver VERSION: the release (or branch) to upgrade to"))
	}
	l, err := o.load(s)
	if err != nil {
		return err
	}
	uo := flow.UpgradeOptions{NVIDIA: o.nvidiaOptions(), Upgrade: upgrade.Options{
		Budget: budget, Canary: o.canary, Named: o.hosts, Selector: sel, WaitForJobs: o.waitForJobs, Force: o.force,
		ContinueOnFailure: o.continueOnFailure, GPUTimeout: o.gpuTimeout, SkipEtcdSnapshot: o.skipEtcdSnapshot,
		Drain: upgrade.DrainOptions{Force: o.force, GracePeriod: o.gracePeriod, Timeout: o.drainTimeout, DeleteEmptyDirData: o.deleteEmptyDirData},
	}}
	if l.inv.Cluster.Spec.Orchestrator == inventory.Swarm {
		if err := o.swarmFlags(cmd); err != nil {
			return err
		}
	}
	if uo.Kubeconfig, _, err = o.kube.api(o.inventory); err != nil {
		return err
	}
	f, err := r.Start(l.inv, uo, o.writeInventory)
	if err != nil {
		return err
	}
	sum, runErr := o.execute(cmd.Context(), s, l, f.Flow)
	if sum == nil {
		return runErr
	}
	res, err := r.Finish(sum)
	if err == nil {
		err = o.writeUpgradeResult(l.out, res)
	}
	if err != nil && runErr == nil {
		runErr = err
	}
	if why := f.Upgrade.Unfinished(); runErr == nil && len(why) > 0 && !o.dryRun {
		// Nothing failed, yet nodes still run the old driver: exit 3, as
		// for a failure, naming them.
		return &hostsFailedError{err: fmt.Errorf("the rollout is not finished: %s", strings.Join(why, "; "))}
	}
	return runError(runErr)
}

// swarmFlags refuses the flags that mean something only on Kubernetes.
func (o *upgradeOptions) swarmFlags(cmd *cobra.Command) error {
	if o.kube.chosen() {
		return usage(fmt.Errorf("%s: spec.orchestrator is swarm; the swarm is reached through its first manager", o.kube.flag()))
	}
	why := map[string]string{
		"grace-period":         "a swarm service's own stop grace period applies (docker service update --stop-grace-period)",
		"delete-emptydir-data": "swarm tasks have no emptyDir volumes",
		"skip-etcd-snapshot":   "a swarm has no etcd (its managers keep its state)",
	}
	for _, name := range []string{"grace-period", "delete-emptydir-data", "skip-etcd-snapshot"} {
		if cmd.Flags().Changed(name) {
			return usage(fmt.Errorf("--%s: spec.orchestrator is swarm: %s", name, why[name]))
		}
	}
	return nil
}

// writeUpgradeResult says where the etcd snapshot is, how far the rollout
// got, and how to record the new versions (or that they were).
func (o *upgradeOptions) writeUpgradeResult(out ui.Output, res *flow.UpgradeResult) error {
	if out.Format == ui.FormatJSON {
		return writeResult(out, res)
	}
	w := out.W
	if res.Snapshot != "" {
		fmt.Fprintf(w, "\netcd snapshot before the rollout: %s\n", res.Snapshot)
	}
	if len(res.Order) > 0 {
		verb := "Upgraded"
		if o.mig {
			verb = "Applied the MIG layouts"
		}
		if res.DryRun {
			verb = "Would upgrade"
			if o.mig {
				verb = "Would apply the MIG layouts"
			}
		}
		fmt.Fprintf(w, "%s in %d waves: %s\n", verb, res.Waves, strings.Join(res.Order, ", "))
	}
	switch {
	case res.DryRun:
	case !res.Complete:
		command := "upgrade driver"
		switch {
		case o.mig:
			command = "mig apply"
		case o.kubernetes:
			command = "upgrade kubernetes"
		}
		fmt.Fprintf(w, "The rollout is not finished (state in %s): fix what is named above, then gpukit %s -i %s --resume\n", res.State, command, o.inventory)
	case o.mig:
	case res.Written != "":
		fmt.Fprintf(w, "Recorded in %s: %s\n", res.Written, strings.Join(res.Record, ", "))
	default:
		fmt.Fprintf(w, "Record the new versions in %s (the inventory is the source of truth; --write-inventory does it): %s\n", o.inventory, strings.Join(res.Record, ", "))
	}
	return nil
}
