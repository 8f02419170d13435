package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpukit/gpukit/internal/cli"
	"github.com/gpukit/gpukit/internal/flow"
	"github.com/gpukit/gpukit/test/lab"
)

// etcdLifecycle proves etcd's backup, restore and scheduled snapshots on a
// cluster of three control planes (kubeadm's stacked members, etcdctl and
// etcdutl from the lab's etcd image, as registry.k8s.io/etcd has them): the
// timer init installed from spec.kubernetes.etcdBackup keeps the newest
// snapshots; a backup is copied here with its sha256 (mode 0600); a copy
// whose bytes changed is refused before any host is touched; the restore
// brings back what was there at the backup and drops what came after, every
// member healthy again.
func etcdLifecycle(t *testing.T, l *lab.Lab, inv string, kubectl func(...string) []byte) {
	t.Helper()
	dir := t.TempDir()

	// The timer: on every control plane, and each run keeps the newest 2.
	for _, h := range []string{"lab-1", "lab-2", "lab-3"} {
		if got := l.SSH(t, h, "systemctl is-enabled gpukit-etcd-backup.timer; systemctl is-active gpukit-etcd-backup.timer"); got != "enabled\nactive" {
			t.Errorf("%s: gpukit-etcd-backup.timer is %q, want enabled and active", h, got)
		}
	}
	began := time.Now()
	got := l.SSH(t, "lab-2", "for i in 1 2 3; do systemctl start gpukit-etcd-backup.service; sleep 1; done; ls /var/lib/gpukit/etcd-snapshots/ | grep -c '^scheduled-.*\\.db$'; stat -c %a /var/lib/gpukit/etcd-snapshots/scheduled-*.db | sort -u")
	if got != "2\n600" {
		t.Errorf("after 3 scheduled runs on lab-2: %q, want 2 snapshots of mode 600 (keep: 2)", got)
	}
	t.Logf("3 scheduled snapshots on lab-2 in %s", time.Since(began).Round(time.Millisecond))

	kubectl("create", "configmap", "gpukit-before-backup", "--from-literal=at=before")
	snap := filepath.Join(dir, "lab.etcd.db")
	began = time.Now()
	r := runInit(t, "etcd", "backup", "-i", inv, "--to", snap)
	if r.code != cli.ExitOK {
		t.Fatalf("etcd backup: exit %d %v\n%s", r.code, r.failed, r.out)
	}
	var res flow.EtcdBackupResult
	for _, line := range strings.Split(r.out, "\n") {
		if strings.Contains(line, `"type":"etcd-backup"`) {
			if err := json.Unmarshal([]byte(line), &res); err != nil {
				t.Fatal(err)
			}
		}
	}
	st, err := os.Stat(snap)
	if err != nil || res.File != snap || res.Bytes != st.Size() || len(res.SHA256) != 64 {
		t.Fatalf("etcd backup: result %+v, file %v %v", res, st, err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("%s has mode %o, want 600", snap, st.Mode().Perm())
	}
	t.Logf("etcd backup: %d bytes from %s in %s", res.Bytes, res.ControlPlane, time.Since(began).Round(time.Millisecond))
	if left := l.SSH(t, res.ControlPlane, "ls /var/lib/gpukit/etcd-snapshots/ | grep -c '^backup-' || true"); left != "0" {
		t.Errorf("%s keeps %s backup snapshots after the copy", res.ControlPlane, left)
	}
	kubectl("create", "configmap", "gpukit-after-backup", "--from-literal=at=after")

	// A copy whose bytes changed, with the backup's sha256 beside it.
	bad := filepath.Join(dir, "bad.db")
	b, err := os.ReadFile(snap)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0xff
	sum, err := os.ReadFile(snap + ".sha256")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, b, 0o600); err == nil {
		err = os.WriteFile(bad+".sha256", sum, 0o600)
	}
	if err != nil {
		t.Fatal(err)
	}
	r = runInit(t, "etcd", "restore", "-i", inv, "--from", bad)
	if r.code != cli.ExitUsage || !strings.Contains(r.out, "not the one backed up") || len(r.writeSteps()) != 0 {
		t.Fatalf("restore of a changed snapshot: exit %d, writes %v\n%s", r.code, r.writeSteps(), r.out)
	}

	began = time.Now()
	r = runInit(t, "etcd", "restore", "-i", inv, "--from", snap)
	if r.code != cli.ExitOK || r.counts.Changed != 3 {
		t.Fatalf("etcd restore: exit %d %+v %v\n%s", r.code, r.counts, r.failed, r.out)
	}
	t.Logf("etcd restore of 3 control planes: %s (stop %s, restore %s, start %s)", time.Since(began).Round(time.Millisecond),
		phaseTime(r, "etcd/stop"), phaseTime(r, "etcd/restore"), phaseTime(r, "etcd/start"))
	if got := string(kubectl("get", "configmap", "gpukit-before-backup", "-o", "jsonpath={.data.at}")); got != "before" {
		t.Errorf("after the restore, gpukit-before-backup holds %q", got)
	}
	if out := string(kubectl("get", "configmap", "-o", "name")); strings.Contains(out, "gpukit-after-backup") {
		t.Errorf("after the restore, the ConfigMap made after the backup is still there:\n%s", out)
	}
	kubectl("wait", "--for=condition=Ready", "node", "--all", "--timeout=180s")
	if got := l.SSH(t, "lab-3", "ls -d /var/lib/gpukit/etcd-before-restore/*/member >/dev/null && ls /etc/kubernetes/manifests | tr '\\n' ' '"); got != "etcd.yaml kube-apiserver.yaml kube-controller-manager.yaml kube-scheduler.yaml" {
		t.Errorf("lab-3 after the restore: %q (want its member's data before kept and its static pods back)", got)
	}

	// Taken out of the inventory, the timer leaves every control plane at
	// the next init; the snapshots it took stay.
	b, err = os.ReadFile(inv)
	if err != nil {
		t.Fatal(err)
	}
	// the etcdBackup key and the lines indented below it
	var without []byte
	indent := -1
	for line := range strings.Lines(string(b)) {
		depth := len(line) - len(strings.TrimLeft(line, " "))
		switch {
		case indent >= 0 && depth > indent:
			continue
		case strings.HasPrefix(strings.TrimLeft(line, " "), "etcdBackup:"):
			indent = depth
			continue
		}
		indent = -1
		without = append(without, line...)
	}
	if len(without) == len(b) {
		t.Fatalf("no spec.kubernetes.etcdBackup in %s:\n%s", inv, b)
	}
	noTimer := filepath.Join(dir, "no-timer.yaml")
	if err := os.WriteFile(noTimer, without, 0o644); err != nil {
		t.Fatal(err)
	}
	r = runInit(t, "init", "-i", noTimer, "--kubeconfig-out", filepath.Join(dir, "no-timer.kubeconfig"))
	if r.code != cli.ExitOK || r.counts.Changed != 3 {
		t.Fatalf("init without etcdBackup: exit %d %+v %v\n%s", r.code, r.counts, r.failed, r.out)
	}
	for _, h := range []string{"lab-1", "lab-2", "lab-3"} {
		if got := l.SSH(t, h, "systemctl list-unit-files 'gpukit-etcd-backup*' --no-legend | wc -l; ls /var/lib/gpukit/etcd-snapshots | grep -c '^scheduled-' || true"); !strings.HasPrefix(got, "0\n") {
			t.Errorf("%s after init without etcdBackup: %q, want no unit", h, got)
		}
	}
	if got := l.SSH(t, "lab-2", "ls /var/lib/gpukit/etcd-snapshots | grep -c '^scheduled-'"); got != "2" {
		t.Errorf("lab-2's scheduled snapshots after the timer left: %s, want the 2 it kept", got)
	}
}
