package cli

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpukit/gpukit/internal/flow"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/ui"
)

func newEtcdCmd(s Streams) *cobra.Command {
	return group(&cobra.Command{
		Use:   "etcd",
		Short: "Back up the Kubernetes cluster's etcd, and restore it",
		Example: `  gpukit etcd backup -i cluster.yaml --to gpu-lab.etcd.db
  gpukit etcd restore -i cluster.yaml --from gpu-lab.etcd.db`,
	}, newEtcdBackupCmd(s), newEtcdRestoreCmd(s))
}

type etcdOptions struct {
	runOptions
	path string
}

func newEtcdBackupCmd(s Streams) *cobra.Command {
	o := &etcdOptions{}
	cmd := &cobra.Command{
		Use:   "backup -i FILE [--to PATH]",
		Short: "Take an etcd snapshot on the first control plane and copy it here",
		Long: `Take a snapshot of the cluster's etcd (kubeadm's stacked members) on the first control plane
and copy it to this machine:

  etcd/snapshot  etcdctl snapshot save on the first control plane (the host's etcdctl, else
                 the one in kubeadm's etcd image), into /var/lib/gpukit/etcd-snapshots
  etcd/copy      the snapshot streamed back to --to (mode 0600: it holds the cluster's
                 Secrets; never logged), its sha256 checked against the host's and written
                 to PATH.sha256 (sha256sum's format), then removed from the host

gpukit etcd restore takes the file back, and refuses it when it does not match PATH.sha256.
spec.kubernetes.etcdBackup schedules snapshots on every control plane instead (init
installs a systemd timer that keeps the newest).

Exit code 0 when the snapshot was copied and checked, 1 when a phase failed (named), 2 on bad
input.`,
		Example: `  gpukit etcd backup -i cluster.yaml
  gpukit etcd backup -i cluster.yaml --to /backups/gpu-lab-$(date +%F).db -o json`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error { return o.backup(cmd, s) },
	}
	o.addFlags(cmd, honours{writes: true})
	o.phaseFlags(cmd, func(inv *inventory.Inventory) (flow.Flow, error) {
		f, err := flow.NewEtcdBackup(inv, "snapshot.db")
		if err != nil {
			return flow.Flow{}, err
		}
		return f.Flow, nil
	})
	f := cmd.Flags()
	f.StringVar(&o.path, "to", "", "where the snapshot is written, mode 0600 (default ./<cluster name>.etcd-<UTC time>.db); PATH.sha256 beside it")
	f.BoolVar(&o.dryRun, "dry-run", false, "show what would be done; take and write nothing")
	return cmd
}

func (o *etcdOptions) backup(cmd *cobra.Command, s Streams) error {
	if o.list {
		return o.printPhases(s)
	}
	l, err := o.load(s)
	if err != nil {
		return err
	}
	to := cmp.Or(o.path, l.inv.Cluster.Metadata.Name+".etcd-"+time.Now().UTC().Format("20060102T150405Z")+".db")
	if err := writableFile(to); err != nil {
		return usage(fmt.Errorf("--to %s: %w", to, err))
	}
	f, err := flow.NewEtcdBackup(l.inv, to)
	if err != nil {
		return usage(err)
	}
	sum, err := o.execute(cmd.Context(), s, l, f.Flow)
	if sum == nil {
		return runError(err)
	}
	res := f.Result(sum, o.dryRun)
	if res.File != "" && l.out.Format != ui.FormatJSON {
		fmt.Fprintf(l.out.W, "\nThe etcd snapshot of %s is %s (%d bytes, mode 0600), its sha256 in %s.sha256: gpukit etcd restore -i FILE --from %s\n",
			res.ControlPlane, res.File, res.Bytes, res.File, res.File)
	}
	if werr := writeResult(l.out, res); werr != nil && err == nil {
		err = werr
	}
	return runError(err)
}

// writableFile checks, before any host is reached, that a new file can be
// made at path: its directory exists, and nothing is there already.
func writableFile(path string) error {
	if _, err := os.Lstat(path); err == nil {
		return fmt.Errorf("a file is there already; give another path, or remove it")
	}
	st, err := os.Stat(filepath.Dir(path))
	if err != nil {
		return err
	}
	if !st.IsDir() {
		return fmt.Errorf("%s is not a directory", filepath.Dir(path))
	}
	return nil
}

func newEtcdRestoreCmd(s Streams) *cobra.Command {
	o := &etcdOptions{}
	cmd := &cobra.Command{
		Use:   "restore -i FILE --from PATH",
		Short: "Restore every control plane's etcd from a snapshot gpukit etcd backup took",
		Long: `Restore the cluster's etcd from a snapshot gpukit etcd backup wrote. The snapshot is checked
against PATH.sha256 first: one that does not match is refused (exit 2) and nothing is changed.
Every control plane of the inventory takes part: one that cannot be reached stops the restore
before anything changes. Each phase runs on every control plane before the next starts:

  etcd/members  each member's name, peer URL, data directory and image, from its static pod
  etcd/upload   the snapshot to each control plane (checked against its sha256 there)
  etcd/stop     etcd, the API server, the controller manager and the scheduler stopped (their
                static pods set aside in /etc/kubernetes/gpukit-restore)
  etcd/restore  etcdutl snapshot restore of each member into a new data directory (the
                revision bumped and compacted, so that every client's watch starts again;
                etcdutl from the host, else from kubeadm's etcd image), the data before kept
                in /var/lib/gpukit/etcd-before-restore/<time>
  etcd/start    the static pods back, the kubelet restarted, etcd and the API server waited for
  etcd/check    every member started and healthy, the API listing the nodes

Everything written to the cluster after the snapshot is gone after the restore. A failure
stops the restore at its phase on every host; run it again to go on.

Exit code 0 when the cluster is back and checked, 1 when a phase failed (named), 2 on bad
input.`,
		Example: `  gpukit etcd restore -i cluster.yaml --from gpu-lab.etcd-20261205T020000Z.db
  gpukit etcd restore -i cluster.yaml --from gpu-lab.etcd.db --dry-run`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error { return o.restore(cmd, s) },
	}
	o.addFlags(cmd, honours{writes: true})
	o.phaseFlags(cmd, flow.ListEtcdRestore)
	f := cmd.Flags()
	f.StringVar(&o.path, "from", "", "the snapshot gpukit etcd backup wrote (PATH.sha256 beside it)")
	f.BoolVar(&o.dryRun, "dry-run", false, "show what each phase would do; change nothing")
	return cmd
}

func (o *etcdOptions) restore(cmd *cobra.Command, s Streams) error {
	if o.list {
		return o.printPhases(s)
	}
	if o.path == "" {
		return usage(fmt.Errorf("--from PATH is required: the snapshot gpukit etcd backup wrote"))
	}
	l, err := o.load(s)
	if err != nil {
		return err
	}
	f, err := flow.NewEtcdRestore(l.inv, o.path)
	if err != nil {
		return err
	}
	sum, err := o.execute(cmd.Context(), s, l, f.Flow)
	if sum == nil {
		return runError(err)
	}
	if werr := writeResult(l.out, f.Result(sum, o.dryRun)); werr != nil && err == nil {
		err = werr
	}
	return runError(err)
}
