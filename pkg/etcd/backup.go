package etcd

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/scripts"
)

// Phase names, stable for --only-phases / --skip-phases, events and logs.
const (
	PhaseSnapshot   = "etcd/snapshot"
	PhaseCopy       = "etcd/copy"
	PhaseMembers    = "etcd/members"
	PhaseUpload     = "etcd/upload"
	PhaseStop       = "etcd/stop"
	PhaseRestore    = "etcd/restore"
	PhaseStart      = "etcd/start"
	PhaseCheck      = "etcd/check"
	PhaseSchedule   = "kubernetes/etcd-backup"
	PhaseUnschedule = "reset/etcd-backup"
)

// SnapshotDir is where snapshots are kept on a control plane: an upgrade's,
// a backup's until it is copied back, the scheduled ones.
const SnapshotDir = "/var/lib/gpukit/etcd-snapshots"

// Target picks the host a cluster-wide phase runs on among the run's.
type Target func([]*engine.Host) []*engine.Host

// Backup is one `gpukit etcd backup`: the snapshot taken on the control
// plane target picks, then copied to To on this machine (mode 0600) with
// To+".sha256" beside it, and removed from the host.
type Backup struct {
	inv    *inventory.Inventory
	to     string
	target Target
	now    func() time.Time

	mu     sync.Mutex
	remote string // the snapshot's path on the host
	sum    string // its sha256, as the host computed it
	size   int64  // bytes copied
	host   string
}

// NewBackup returns the backup of inv's etcd into the file to.
func NewBackup(inv *inventory.Inventory, to string, target Target) *Backup {
	return &Backup{inv: inv, to: to, target: target, now: time.Now}
}

// Phases are the backup's, in order.
func (b *Backup) Phases() []engine.Phase { return []engine.Phase{&snapshotPhase{b}, &copyPhase{b}} }

// Taken is what the backup wrote: the file, its sha256 and size, the
// control plane it came from; empty before the copy.
func (b *Backup) Taken() (file, sum string, size int64, host string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.size == 0 {
		return "", "", 0, ""
	}
	return b.to, b.sum, b.size, b.host
}

type snapshotPhase struct{ b *Backup }

func (*snapshotPhase) Name() string  { return PhaseSnapshot }
func (*snapshotPhase) Title() string { return "Take an etcd snapshot on the first control plane" }

func (p *snapshotPhase) Targets(hosts []*engine.Host) []*engine.Host { return p.b.target(hosts) }

func (p *snapshotPhase) Run(ctx context.Context, h *engine.Host) error {
	path, sum, err := Snapshot(ctx, h, fmt.Sprintf("backup-%s-%s.db", p.b.inv.Cluster.Metadata.Name, p.b.now().UTC().Format("20060102T150405Z")))
	if err != nil || h.DryRun() {
		return err
	}
	p.b.mu.Lock()
	p.b.remote, p.b.sum, p.b.host = path, sum, h.Name()
	p.b.mu.Unlock()
	return nil
}

// Snapshot takes a snapshot of h's etcd member into SnapshotDir/name (a
// write: planned in a dry-run, which returns "") and returns its path on h
// and its sha256 as h computed it.
func Snapshot(ctx context.Context, h *engine.Host, name string) (path, sum string, err error) {
	path = SnapshotDir + "/" + name
	cmd, err := scripts.EtcdSnapshot(scripts.EtcdSnapshotParams{Dir: SnapshotDir, Name: name})
	if err != nil {
		return "", "", err
	}
	res, err := h.Apply(ctx, "etcd snapshot "+path, cmd)
	if err != nil || h.DryRun() {
		return "", "", err
	}
	for _, line := range strings.Split(string(res.Stdout), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "sha256="); ok {
			sum = v
		}
	}
	if len(sum) != sha256.Size*2 {
		return "", "", fmt.Errorf("the snapshot script printed no sha256 line")
	}
	return path, sum, nil
}

type copyPhase struct{ b *Backup }

func (*copyPhase) Name() string { return PhaseCopy }
func (*copyPhase) Title() string {
	return "Copy the snapshot to this machine, check its sha256, remove it from the host"
}

func (p *copyPhase) Targets(hosts []*engine.Host) []*engine.Host { return p.b.target(hosts) }

func (p *copyPhase) Run(ctx context.Context, h *engine.Host) error {
	b := p.b
	if h.DryRun() {
		return h.WriteAPI(ctx, "copy the snapshot", "copy the snapshot to "+b.to+" (mode 0600) and its sha256 to "+b.to+".sha256", nil)
	}
	b.mu.Lock()
	remote, want := b.remote, b.sum
	b.mu.Unlock()
	if remote == "" {
		return fmt.Errorf("no snapshot was taken (%s did not run)", PhaseSnapshot)
	}
	read, err := scripts.EtcdSnapshotFile(scripts.EtcdSnapshotFileParams{Path: remote})
	if err != nil {
		return err
	}
	f, err := newSnapshotFile(b.to)
	if err != nil {
		return err
	}
	defer f.discard()
	read.Stdout = f
	// The snapshot holds the cluster's Secrets: its bytes are never logged.
	if _, err := h.Run(ctx, "copy "+remote+" to "+b.to, read, engine.SecretOutput(), engine.Timeout(time.Hour)); err != nil {
		return err
	}
	if got := f.sum(); got != want {
		return fmt.Errorf("the copy of %s has sha256 %s, the host's %s: not kept", remote, got, want)
	}
	if err := f.keep(want); err != nil {
		return err
	}
	b.mu.Lock()
	b.size = f.n
	b.mu.Unlock()
	h.Logf("%s: %s (%d bytes, sha256 %s)", PhaseCopy, b.to, f.n, want)
	rm, err := scripts.EtcdSnapshotFile(scripts.EtcdSnapshotFileParams{Path: remote, Remove: true})
	if err != nil {
		return err
	}
	_, err = h.Apply(ctx, "remove "+remote, rm)
	return err
}

// snapshotFile is the copy being written: to a temporary file beside the
// destination (mode 0600 from the start: the snapshot holds Secrets),
// hashed as it arrives, renamed into place only once its sum matches.
type snapshotFile struct {
	path string
	f    *os.File
	h    hash.Hash
	n    int64
	done bool
}

func newSnapshotFile(path string) (*snapshotFile, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.part")
	if err != nil {
		return nil, err
	}
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, err
	}
	return &snapshotFile{path: path, f: f, h: sha256.New()}, nil
}

func (s *snapshotFile) Write(b []byte) (int, error) {
	n, err := s.f.Write(b)
	s.h.Write(b[:n])
	s.n += int64(n)
	return n, err
}

func (s *snapshotFile) sum() string { return hex.EncodeToString(s.h.Sum(nil)) }

// keep syncs the copy, writes path.sha256 (sha256sum's format, so that
// `sha256sum -c` checks it too) and renames the copy into place.
func (s *snapshotFile) keep(sum string) error {
	err := s.f.Sync()
	if cerr := s.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.WriteFile(s.path+".sha256", []byte(sum+"  "+filepath.Base(s.path)+"\n"), 0o600)
	}
	if err == nil {
		err = os.Rename(s.f.Name(), s.path)
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", s.path, err)
	}
	s.done = true
	return nil
}

// discard removes a copy that was not kept.
func (s *snapshotFile) discard() {
	if !s.done {
		s.f.Close()
		os.Remove(s.f.Name())
	}
}

// ReadSum reads path.sha256 as sha256sum writes it (the sum, two spaces,
// the name) and checks path against it: the sum, or an error saying why the
// file cannot be trusted.
func ReadSum(path string) (string, int64, error) {
	b, err := os.ReadFile(path + ".sha256")
	if err != nil {
		return "", 0, fmt.Errorf("%s.sha256: %w (gpukit etcd backup writes it beside the snapshot)", path, err)
	}
	fields := strings.Fields(string(b))
	if len(fields) == 0 || len(fields[0]) != sha256.Size*2 {
		return "", 0, fmt.Errorf("%s.sha256: line 1: want the snapshot's sha256 (64 hex digits)", path)
	}
	want := strings.ToLower(fields[0])
	f, err := os.Open(path)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return "", 0, fmt.Errorf("%s: %w", path, err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != want {
		return "", 0, fmt.Errorf("%s has sha256 %s, but %s.sha256 says %s: the snapshot is not the one backed up (corrupt, truncated or replaced); not restored", path, got, path, want)
	}
	return want, n, nil
}
