package etcd_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/engine/enginetest"
	"github.com/gpukit/gpukit/pkg/etcd"
	"github.com/gpukit/gpukit/pkg/event"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/ssh"
)

const doc = `apiVersion: gpukit.dev/v1alpha1
kind: Cluster
metadata: {name: lab}
spec:
  kubernetes:
    controlPlaneEndpoint: 10.0.0.9
    etcdBackup: {schedule: "*-*-* 02:00:00", keep: 3}
  hosts:
    - {name: cp-1, address: 10.0.0.10, roles: [control-plane]}
    - {name: cp-2, address: 10.0.0.11, roles: [control-plane]}
    - {name: gpu-1, address: 10.0.0.12, roles: [worker]}
`

func load(t *testing.T, text string) *inventory.Inventory {
	t.Helper()
	inv, err := inventory.Parse("test.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return inv
}

func first(hosts []*engine.Host) []*engine.Host {
	for _, h := range hosts {
		if h.Name() == "cp-1" {
			return []*engine.Host{h}
		}
	}
	return nil
}

func run(t *testing.T, inv *inventory.Inventory, phases []engine.Phase, handler enginetest.Handler, dryRun bool) (*enginetest.Fleet, *engine.Summary, *enginetest.Recorder) {
	t.Helper()
	fleet := &enginetest.Fleet{Handler: handler}
	rec := &enginetest.Recorder{}
	r := &engine.Runner{Name: "test", Phases: phases, Sink: rec, DryRun: dryRun}
	sum, err := r.Run(context.Background(), inv.Machines, fleet.Dial)
	if err != nil && sum == nil {
		t.Fatal(err)
	}
	return fleet, sum, rec
}

var snapshot = []byte("etcd snapshot bytes: Secrets inside, gpukit-canary-7d1c")

func sumOf(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// The backup takes the snapshot on the first control plane, streams it
// here to a 0600 file with its sha256 beside it, and removes it from the
// host; the bytes are never in an event.
func TestBackup(t *testing.T) {
	inv := load(t, doc)
	to := filepath.Join(t.TempDir(), "lab.db")
	for _, tt := range []struct {
		name    string
		hostSum string // what the host says the sum is
		wantErr string
	}{
		{"copied and checked", sumOf(snapshot), ""},
		{"a copy that differs from the host's is not kept", strings.Repeat("0", 64), "not kept"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := etcd.NewBackup(inv, to, first)
			fleet, sum, rec := run(t, inv, b.Phases(), func(_ context.Context, _ *enginetest.Executor, cmd ssh.Command) (ssh.Result, error) {
				switch cmd.Name {
				case "etcd snapshot":
					return ssh.Result{Stdout: []byte("gpukit: etcd snapshot ...\nsha256=" + tt.hostSum + "\n")}, nil
				case "read the etcd snapshot":
					return ssh.Result{Stdout: snapshot}, nil
				}
				return ssh.Result{}, nil
			}, false)
			if tt.wantErr != "" {
				if len(sum.Failed()) != 1 || !strings.Contains(fmt.Sprint(sum.Failed()), tt.wantErr) {
					t.Fatalf("failed %v", sum.Failed())
				}
				if _, err := os.Stat(to); err == nil {
					t.Error("the bad copy was kept")
				}
				left, _ := filepath.Glob(filepath.Join(filepath.Dir(to), ".*part"))
				if len(left) > 0 {
					t.Errorf("partial files left: %v", left)
				}
				return
			}
			if len(sum.Failed()) != 0 {
				t.Fatalf("failed %v", sum.Failed())
			}
			got, err := os.ReadFile(to)
			if err != nil || string(got) != string(snapshot) {
				t.Fatalf("copy %q %v", got, err)
			}
			st, _ := os.Stat(to)
			if st.Mode().Perm() != 0o600 {
				t.Errorf("mode %o", st.Mode().Perm())
			}
			if s, _ := os.ReadFile(to + ".sha256"); string(s) != sumOf(snapshot)+"  lab.db\n" {
				t.Errorf(".sha256 %q", s)
			}
			if s, n, err := etcd.ReadSum(to); err != nil || s != sumOf(snapshot) || n != int64(len(snapshot)) {
				t.Errorf("ReadSum: %s %d %v", s, n, err)
			}
			names := fleet.Executor("cp-1").Names()
			if !slices.Equal(names, []string{"etcd snapshot", "read the etcd snapshot", "remove the etcd snapshot"}) {
				t.Errorf("cp-1 ran %v", names)
			}
			if ex := fleet.Executor("cp-2"); ex != nil && len(ex.Names()) > 0 {
				t.Errorf("cp-2 ran %v", ex.Names())
			}
			for _, e := range rec.Events() {
				if strings.Contains(e.Line+e.Message+e.Script, "gpukit-canary-7d1c") {
					t.Errorf("the snapshot's bytes are in an event: %+v", e)
				}
			}
			os.Remove(to)
			os.Remove(to + ".sha256")
		})
	}
}

// A dry-run plans the snapshot and the copy and writes nothing here.
func TestBackupDryRun(t *testing.T) {
	inv := load(t, doc)
	to := filepath.Join(t.TempDir(), "lab.db")
	_, sum, rec := run(t, inv, etcd.NewBackup(inv, to, first).Phases(), func(context.Context, *enginetest.Executor, ssh.Command) (ssh.Result, error) {
		t.Error("a command ran in a dry-run")
		return ssh.Result{}, nil
	}, true)
	if len(sum.Failed()) != 0 || len(rec.OfType(event.Planned)) != 2 {
		t.Fatalf("failed %v, planned %v", sum.Failed(), rec.OfType(event.Planned))
	}
	if entries, _ := os.ReadDir(filepath.Dir(to)); len(entries) != 0 {
		t.Errorf("a dry-run wrote %v", entries)
	}
}

// A snapshot that does not match its .sha256 is refused, naming why.
func TestReadSum(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "s.db")
	if err := os.WriteFile(path, snapshot, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ name, sumFile, want string }{
		{"no sum file", "", "gpukit etcd backup writes it"},
		{"not a sum", "hello\n", "64 hex digits"},
		{"another sum", strings.Repeat("ab", 32) + "  s.db\n", "not the one backed up"},
		{"the sum, upper case", strings.ToUpper(sumOf(snapshot)) + "  s.db\n", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			os.Remove(path + ".sha256")
			if tt.sumFile != "" {
				if err := os.WriteFile(path+".sha256", []byte(tt.sumFile), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			_, _, err := etcd.ReadSum(path)
			switch {
			case tt.want == "" && err != nil:
				t.Fatal(err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("err %v, want %q", err, tt.want)
			}
		})
	}
}

// members answers the members read of each control plane.
func members(host string) string {
	ip := map[string]string{"cp-1": "10.0.0.10", "cp-2": "10.0.0.11"}[host]
	return "name=" + host + "\npeer=https://" + ip + ":2380\ndatadir=/var/lib/etcd\nimage=registry.k8s.io/etcd:3.7.0-0\napi=https://" + ip + ":6443\nstopped=0\n"
}

// The restore runs each step on every control plane before the next, with
// the whole cluster in each member's restore; workers are never reached.
func TestRestore(t *testing.T) {
	inv := load(t, doc)
	dir := t.TempDir()
	from := filepath.Join(dir, "s.db")
	if err := os.WriteFile(from, snapshot, 0o600); err != nil {
		t.Fatal(err)
	}
	r := etcd.NewRestore(inv, from, sumOf(snapshot), first, time.Date(2026, 12, 5, 1, 2, 3, 0, time.UTC))
	var (
		mu    sync.Mutex
		order []string
	)
	fleet, sum, _ := run(t, inv, r.Phases(), func(_ context.Context, e *enginetest.Executor, cmd ssh.Command) (ssh.Result, error) {
		mu.Lock()
		order = append(order, cmd.Name)
		mu.Unlock()
		switch cmd.Name {
		case "read the etcd member":
			return ssh.Result{Stdout: []byte(members(e.Host))}, nil
		case "read the cluster after the restore":
			return ssh.Result{Stdout: []byte("members=2\nhealthy=2\nnodes=3\n")}, nil
		}
		return ssh.Result{}, nil
	}, false)
	if len(sum.Failed()) != 0 {
		t.Fatalf("failed %v", sum.Failed())
	}
	if fleet.Executor("gpu-1") != nil && len(fleet.Executor("gpu-1").Names()) > 0 {
		t.Errorf("gpu-1 ran %v", fleet.Executor("gpu-1").Names())
	}
	// every stop before any restore, every restore before any start
	span := func(name string) (first, last int) {
		first, last = -1, -1
		for i, n := range order {
			if n == name {
				if first < 0 {
					first = i
				}
				last = i
			}
		}
		return first, last
	}
	_, stopped := span("etcd restore: stop")
	r1, r2 := span("etcd restore: restore")
	started, _ := span("etcd restore: start")
	if stopped < 0 || !(stopped < r1 && r2 < started) {
		t.Errorf("the steps overlap across the control planes: %v", order)
	}
	for _, h := range []string{"cp-1", "cp-2"} {
		ex := fleet.Executor(h)
		ups := ex.Uploads()
		if len(ups) != 1 || string(ups[0].Content) != string(snapshot) || ups[0].Mode != 0o600 {
			t.Errorf("%s uploads %+v", h, ups)
		}
		for _, c := range ex.Commands() {
			if c.Name == "etcd restore: restore" {
				for _, want := range []string{"--name cp-1", "cp-1=https://10.0.0.10:2380,cp-2=https://10.0.0.11:2380", "gpukit-restore-20261205T010203Z", sumOf(snapshot)} {
					if want == "--name cp-1" {
						want = "--name " + h
					}
					if !strings.Contains(c.Script, want) {
						t.Errorf("%s's restore has no %q", h, want)
					}
				}
			}
		}
	}
	if c := r.Result(); c.Members != 2 || c.Healthy != 2 || c.Nodes != 3 {
		t.Errorf("checked %+v", c)
	}
}

// A control plane that cannot be reached stops the restore before anything
// is changed anywhere.
func TestRestoreNeedsEveryControlPlane(t *testing.T) {
	inv := load(t, doc)
	from := filepath.Join(t.TempDir(), "s.db")
	if err := os.WriteFile(from, snapshot, 0o600); err != nil {
		t.Fatal(err)
	}
	r := etcd.NewRestore(inv, from, sumOf(snapshot), first, time.Now())
	fleet := &enginetest.Fleet{DialErr: map[string]error{"cp-2": fmt.Errorf("no route to host")},
		Handler: func(_ context.Context, e *enginetest.Executor, cmd ssh.Command) (ssh.Result, error) {
			return ssh.Result{Stdout: []byte(members(e.Host))}, nil
		}}
	run := &engine.Runner{Name: "test", Phases: r.Phases(), Sink: &enginetest.Recorder{}}
	sum, _ := run.Run(context.Background(), inv.Machines, fleet.Dial)
	if sum == nil || len(sum.Failed()) == 0 {
		t.Fatal("the restore went on without cp-2")
	}
	ex := fleet.Executor("cp-1")
	if ex != nil && (len(ex.Uploads()) > 0 || len(ex.Names()) > 0) {
		t.Errorf("cp-1 ran %v, uploads %d", ex.Names(), len(ex.Uploads()))
	}
	if !strings.Contains(fmt.Sprint(sum.Failed()), "cp-1") {
		t.Errorf("failed %v", sum.Failed())
	}
}

// The schedule: installed where it is missing, left alone where converged,
// removed where the inventory no longer asks for it.
func TestSchedule(t *testing.T) {
	without := strings.Replace(doc, "    etcdBackup: {schedule: \"*-*-* 02:00:00\", keep: 3}\n", "", 1)
	for _, tt := range []struct {
		name, inv, pending string
		want               []string // cp-1's commands
		changed            int
	}{
		{"missing", doc, "pending: write gpukit-etcd-backup.timer\n", []string{"read the etcd backup timer", "schedule etcd snapshots"}, 2},
		{"converged", doc, "", []string{"read the etcd backup timer"}, 0},
		{"taken out of the inventory", without, "pending: remove gpukit-etcd-backup.timer\n", []string{"read the etcd backup timer left", "remove the etcd backup timer"}, 2},
		{"never there", without, "", []string{"read the etcd backup timer left"}, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			inv := load(t, tt.inv)
			fleet, sum, _ := run(t, inv, []engine.Phase{etcd.Schedule(inv)}, func(_ context.Context, _ *enginetest.Executor, cmd ssh.Command) (ssh.Result, error) {
				if strings.HasPrefix(cmd.Name, "read ") {
					return ssh.Result{Stdout: []byte(tt.pending)}, nil
				}
				return ssh.Result{}, nil
			}, false)
			if got := fleet.Executor("cp-1").Names(); !slices.Equal(got, tt.want) {
				t.Errorf("cp-1 ran %v", got)
			}
			if got := fleet.Executor("gpu-1").Names(); len(got) != 0 {
				t.Errorf("gpu-1 ran %v", got)
			}
			if c := sum.HostCounts(); c.Changed != tt.changed {
				t.Errorf("counts %+v", c)
			}
			for _, c := range fleet.Executor("cp-1").Commands() {
				if c.Name == "schedule etcd snapshots" && (!strings.Contains(c.Script, "OnCalendar=*-*-* 02:00:00") || !strings.Contains(c.Script, "head -n -3")) {
					t.Errorf("the timer does not carry the inventory's schedule and keep:\n%s", c.Script)
				}
			}
		})
	}
}
