package preflight

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/engine/enginetest"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/ssh"
)

// probeOutput is what the probe prints on a healthy Debian 12 host.
func probeOutput(host, machineID string) string {
	return fmt.Sprintf(`os.id=debian
os.version=12
os.pretty=Debian GNU/Linux 12 (bookworm)
kernel=6.1.0-26-amd64
arch=x86_64
hostname=%s
cpus=16
mem.kib=65856300
swap.kib=0
root.avail.kib=400000000
machine_id=%s
secureboot=SecureBoot disabled
init=systemd
timesync=yes
timesync.service=chrony
pci.gpu=0000:17:00.0 0x2330
listen.tcp=22
`, host, machineID)
}

func labInventory(names ...string) *inventory.Inventory {
	inv := &inventory.Inventory{Cluster: inventory.Cluster{Spec: inventory.Spec{Orchestrator: inventory.Kubernetes}}}
	for i, n := range names {
		role := inventory.RoleWorker
		if i == 0 {
			role = inventory.RoleControlPlane
		}
		inv.Machines = append(inv.Machines, inventory.Machine{Name: n, Address: fmt.Sprintf("10.0.0.%d", i+1), Roles: []inventory.Role{role}})
	}
	return inv
}

// phases is preflight's part of a command's phase list (internal/flow).
func phases(p *Preflight) []engine.Phase {
	return []engine.Phase{p.Facts(), p.HostChecks(), p.ClusterChecks()}
}

func TestPreflightRun(t *testing.T) {
	inv := labInventory("cp-1", "gpu-001", "gpu-002", "gpu-003")
	fleet := &enginetest.Fleet{
		DialErr: map[string]error{"gpu-003": errors.New("dial tcp 10.0.0.4:22: connect: no route to host")},
		Handler: func(_ context.Context, e *enginetest.Executor, cmd ssh.Command) (ssh.Result, error) {
			if !cmd.Sudo || !strings.Contains(cmd.Script, "kv os.id") {
				return ssh.Result{}, fmt.Errorf("unexpected command %q", cmd.Name)
			}
			id := "id-" + e.Host
			if e.Host == "gpu-002" {
				id = "id-gpu-001" // a cloned image
			}
			return ssh.Result{Stdout: []byte(probeOutput(e.Host, id))}, nil
		},
	}
	p := New(inv)
	r := &engine.Runner{Name: "gpukit preflight", Phases: phases(p)}
	sum, err := r.Run(context.Background(), inv.Machines, fleet.Dial)
	if !errors.Is(err, engine.ErrSomeHostsFailed) {
		t.Fatalf("err = %v, want some hosts failed", err)
	}
	rep := p.Report(sum)
	want := map[string]Status{"cp-1": Pass, "gpu-001": Fail, "gpu-002": Fail, "gpu-003": Fail}
	for _, h := range rep.Hosts {
		if h.Status != want[h.Host] {
			t.Errorf("%s: %s (%s) %+v, want %s", h.Host, h.Status, h.Error, h.Checks, want[h.Host])
		}
	}
	if got := rep.Hosts[3]; got.Facts != nil || !strings.Contains(got.Error, "no route to host") {
		t.Errorf("unreachable host reported as %+v", got)
	}
	if got := rep.Hosts[1].Checks[0]; got.Check != "unique-machine-id" || got.Status != Fail {
		t.Errorf("first check of gpu-001 is %+v, want the failed machine-id check first", got)
	}
	if pass, _, fail := rep.Counts(); pass != 1 || fail != 3 {
		t.Errorf("counts pass=%d fail=%d", pass, fail)
	}
	for _, name := range []string{"cp-1", "gpu-001"} {
		if n := len(fleet.Executor(name).Commands()); n != 1 {
			t.Errorf("%s ran %d commands, want the probe once (one round trip)", name, n)
		}
	}
}

func TestPreflightDryRunStillProbes(t *testing.T) {
	inv := labInventory("cp-1")
	fleet := &enginetest.Fleet{Handler: func(_ context.Context, e *enginetest.Executor, _ ssh.Command) (ssh.Result, error) {
		return ssh.Result{Stdout: []byte(probeOutput(e.Host, "x"))}, nil
	}}
	p := New(inv)
	r := &engine.Runner{Phases: phases(p), DryRun: true}
	sum, err := r.Run(context.Background(), inv.Machines, fleet.Dial)
	if err != nil {
		t.Fatal(err)
	}
	if rep := p.Report(sum); rep.Hosts[0].Facts == nil || rep.Hosts[0].Facts.OS.ID != "debian" {
		t.Fatalf("dry-run did not probe: %+v", rep.Hosts[0])
	}
}
