package etcd

import (
	"cmp"
	"context"
	"strconv"
	"strings"

	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/scripts"
)

// The scheduled backup's unit and script on each control plane, and its
// defaults.
const (
	TimerUnit       = "gpukit-etcd-backup"
	timerScript     = "/usr/local/lib/gpukit/etcd-backup"
	DefaultSchedule = "daily"
	DefaultKeep     = 7
)

// Schedule is kubernetes/etcd-backup: the inventory's
// spec.kubernetes.etcdBackup as a systemd timer on every control plane, or
// gpukit's timer removed where the inventory no longer asks for one.
func Schedule(inv *inventory.Inventory) engine.Phase { return &schedulePhase{inv: inv} }

// Unschedule is reset/etcd-backup: gpukit's timer removed from the control
// planes reset (the snapshots it took stay).
func Unschedule(inv *inventory.Inventory) engine.Phase { return &schedulePhase{inv: inv, reset: true} }

type schedulePhase struct {
	inv   *inventory.Inventory
	reset bool
}

func (p *schedulePhase) Name() string {
	if p.reset {
		return PhaseUnschedule
	}
	return PhaseSchedule
}

func (p *schedulePhase) Title() string {
	if p.reset {
		return "Remove the scheduled etcd snapshots (the snapshots stay)"
	}
	return "Schedule etcd snapshots on the control planes (spec.kubernetes.etcdBackup)"
}

func (p *schedulePhase) Targets(hosts []*engine.Host) []*engine.Host {
	return controlPlanes(p.inv, hosts)
}

func (p *schedulePhase) params(mode string) scripts.EtcdBackupTimerParams {
	par := scripts.EtcdBackupTimerParams{Mode: mode, Unit: TimerUnit, Script: timerScript, Dir: SnapshotDir}
	if b := p.inv.Cluster.Spec.Kubernetes.EtcdBackup; b != nil {
		par.OnCalendar, par.Keep = cmp.Or(b.Schedule, DefaultSchedule), cmp.Or(b.Keep, DefaultKeep)
	}
	return par
}

// on says whether the timer is to be there.
func (p *schedulePhase) on() bool { return !p.reset && p.inv.Cluster.Spec.Kubernetes.EtcdBackup != nil }

func (p *schedulePhase) ShouldRun(ctx context.Context, h *engine.Host) (bool, string, error) {
	mode := scripts.TimerCheck
	if !p.on() {
		mode = scripts.TimerCheckRemove
	}
	cmd, err := scripts.EtcdBackupTimer(p.params(mode))
	if err != nil {
		return false, "", err
	}
	res, err := h.Run(ctx, cmd.Name, cmd)
	if err != nil {
		return false, "", err
	}
	var todo []string
	for _, line := range strings.Split(string(res.Stdout), "\n") {
		if what, ok := strings.CutPrefix(line, "pending: "); ok {
			todo = append(todo, what)
		}
	}
	switch {
	case len(todo) > 0:
		h.Logf("%s: to do: %s", PhaseSchedule, strings.Join(todo, ", "))
		return true, "", nil
	case p.on():
		par := p.params(mode)
		return false, "etcd snapshots scheduled (" + par.OnCalendar + ", the newest " + strconv.Itoa(par.Keep) + " kept)", nil
	}
	return false, "no scheduled etcd backup (spec.kubernetes.etcdBackup)", nil
}

func (p *schedulePhase) Run(ctx context.Context, h *engine.Host) error {
	mode := scripts.TimerApply
	if !p.on() {
		mode = scripts.TimerRemove
	}
	cmd, err := scripts.EtcdBackupTimer(p.params(mode))
	if err != nil {
		return err
	}
	_, err = h.Apply(ctx, cmd.Name, cmd)
	return err
}
