package scripts

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/gpukit/gpukit/pkg/ssh"
)

// The scripts of a kubeadm cluster's etcd: the snapshots of an upgrade and
// of gpukit etcd backup, the restore's steps, the scheduled backup.
var (
	etcdSnapshotTemplate     = parse[EtcdSnapshotParams]("etcd-snapshot.sh")
	etcdSnapshotFileTemplate = parse[EtcdSnapshotFileParams]("etcd-snapshot-file.sh")
	etcdMembersTemplate      = parse[NoParams]("etcd-members.sh")
	etcdRestoreTemplate      = parse[EtcdRestoreParams]("etcd-restore.sh")
	etcdBackupTimerTemplate  = parse[EtcdBackupTimerParams]("etcd-backup-timer.sh")
)

var (
	snapshotName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*\.db$`)
	sha256Hex    = regexp.MustCompile(`^[0-9a-f]{64}$`)
	// memberName is an etcd member's name as kubeadm gives it: the node's.
	memberName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)
	peerURL    = regexp.MustCompile(`^https?://[A-Za-z0-9_.:\[\]-]+$`)
	// imageName is an image reference: registry/path:tag[@digest].
	imageName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_./:@-]*$`)
	// calendar is a systemd calendar event's characters (systemd.time(7));
	// the host's systemd-analyze decides whether it is one.
	calendar = regexp.MustCompile(`^[A-Za-z0-9 *:/,.~+-]+$`)
)

// EtcdSnapshotParams take a snapshot of a kubeadm control plane's etcd into
// Dir/Name.
type EtcdSnapshotParams struct{ Dir, Name string }

// Validate checks the path.
func (p EtcdSnapshotParams) Validate() error {
	if !filePath.MatchString(p.Dir) || !snapshotName.MatchString(p.Name) {
		return fmt.Errorf("snapshot path %q/%q", p.Dir, p.Name)
	}
	return nil
}

// EtcdSnapshot returns the command that takes it; it prints the snapshot's
// "sha256=" line last.
func EtcdSnapshot(p EtcdSnapshotParams) (ssh.Command, error) {
	return command("etcd snapshot", etcdSnapshotTemplate, p)
}

// EtcdSnapshotFileParams name a snapshot on the host: written to stdout, or
// removed.
type EtcdSnapshotFileParams struct {
	Path   string
	Remove bool
}

// Validate checks the path: a .db file.
func (p EtcdSnapshotFileParams) Validate() error {
	if !filePath.MatchString(p.Path) || !strings.HasSuffix(p.Path, ".db") || strings.Contains(p.Path, "/../") {
		return fmt.Errorf("snapshot path %q", p.Path)
	}
	return nil
}

// EtcdSnapshotFile returns the command that writes the snapshot to stdout
// (a secret: the cluster's Secrets are in it) or removes it.
func EtcdSnapshotFile(p EtcdSnapshotFileParams) (ssh.Command, error) {
	name := "read the etcd snapshot"
	if p.Remove {
		name = "remove the etcd snapshot"
	}
	return command(name, etcdSnapshotFileTemplate, p)
}

// EtcdMembers returns the read of a control plane's etcd member (name=,
// peer=, datadir=, image=, api=, stopped= lines).
func EtcdMembers() (ssh.Command, error) {
	return command("read the etcd member", etcdMembersTemplate, NoParams{})
}

// The steps of a restore, each over every control plane before the next.
const (
	RestoreStop    = "stop"
	RestoreRestore = "restore"
	RestoreStart   = "start"
	RestoreCheck   = "check"
)

// EtcdRestoreParams are one step of gpukit etcd restore on a control plane.
type EtcdRestoreParams struct {
	Step string
	// Hold is where the stop sets the static pods aside.
	Hold string
	// TimeoutSeconds bounds stop's and start's waits.
	TimeoutSeconds int
	// Restore: the snapshot uploaded and its sha256; the member's name,
	// peer URL and data directory as its static pod has them; the whole
	// cluster's members (name=peerURL,...); a new cluster token; the etcd
	// image (etcdutl in it); where the data before is kept.
	Snapshot, SHA256                       string
	Name, PeerURL, DataDir, InitialCluster string
	Token, Image, Before                   string
}

// Validate checks every value that reaches the script.
func (p EtcdRestoreParams) Validate() error {
	switch p.Step {
	case RestoreStop, RestoreStart:
		if !filePath.MatchString(p.Hold) || p.TimeoutSeconds <= 0 {
			return fmt.Errorf("restore %s: hold %q, timeout %d", p.Step, p.Hold, p.TimeoutSeconds)
		}
		return nil
	case RestoreCheck:
		return nil
	case RestoreRestore:
	default:
		return fmt.Errorf("restore step %q", p.Step)
	}
	for what, ok := range map[string]bool{
		"snapshot " + p.Snapshot:      filePath.MatchString(p.Snapshot) && strings.HasSuffix(p.Snapshot, ".db"),
		"sha256 " + p.SHA256:          sha256Hex.MatchString(p.SHA256),
		"member name " + p.Name:       memberName.MatchString(p.Name),
		"peer URL " + p.PeerURL:       peerURL.MatchString(p.PeerURL),
		"data directory " + p.DataDir: filePath.MatchString(p.DataDir) && p.DataDir != "/" && !strings.Contains(p.DataDir, ".."),
		"token " + p.Token:            memberName.MatchString(p.Token),
		"image " + p.Image:            imageName.MatchString(p.Image),
		"before " + p.Before:          filePath.MatchString(p.Before) && !strings.Contains(p.Before, ".."),
	} {
		if !ok {
			return fmt.Errorf("restore: %q", what)
		}
	}
	for _, m := range strings.Split(p.InitialCluster, ",") {
		name, url, ok := strings.Cut(m, "=")
		if !ok || !memberName.MatchString(name) || !peerURL.MatchString(url) {
			return fmt.Errorf("restore: initial cluster member %q", m)
		}
	}
	return nil
}

// EtcdRestore returns the command of p's step.
func EtcdRestore(p EtcdRestoreParams) (ssh.Command, error) {
	name := "etcd restore: " + p.Step
	if p.Step == RestoreCheck {
		name = "read the cluster after the restore" // a read, named as reads are
	}
	return command(name, etcdRestoreTemplate, p)
}

// The modes of the scheduled backup's script.
const (
	TimerCheck       = "check"
	TimerApply       = "apply"
	TimerCheckRemove = "check-remove"
	TimerRemove      = "remove"
)

// EtcdBackupTimerParams install (or remove) the scheduled etcd backup of a
// control plane: Unit.timer on OnCalendar runs Script, which keeps the
// newest Keep snapshots in Dir.
type EtcdBackupTimerParams struct {
	Mode            string
	Unit, Script    string
	OnCalendar, Dir string
	Keep            int
}

// Validate checks every value that reaches the script.
func (p EtcdBackupTimerParams) Validate() error {
	switch {
	case p.Mode != TimerCheck && p.Mode != TimerApply && p.Mode != TimerCheckRemove && p.Mode != TimerRemove:
		return fmt.Errorf("timer mode %q", p.Mode)
	case !unitName.MatchString(p.Unit) || !filePath.MatchString(p.Script) || !filePath.MatchString(p.Dir):
		return fmt.Errorf("timer unit %q, script %q, directory %q", p.Unit, p.Script, p.Dir)
	case p.Mode == TimerCheck || p.Mode == TimerApply:
		if !calendar.MatchString(p.OnCalendar) || p.Keep < 1 {
			return fmt.Errorf("timer schedule %q, keep %d", p.OnCalendar, p.Keep)
		}
	}
	return nil
}

// EtcdBackupTimer returns the command of p's mode; the checks print
// "pending: " lines.
func EtcdBackupTimer(p EtcdBackupTimerParams) (ssh.Command, error) {
	name := map[string]string{TimerCheck: "read the etcd backup timer", TimerCheckRemove: "read the etcd backup timer left",
		TimerApply: "schedule etcd snapshots", TimerRemove: "remove the etcd backup timer"}[p.Mode]
	return command(name, etcdBackupTimerTemplate, p)
}
