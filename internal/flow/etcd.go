package flow

import (
	"fmt"
	"time"

	"github.com/gpukit/gpukit/pkg/bootstrap/kubeadm"
	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/etcd"
	"github.com/gpukit/gpukit/pkg/event"
	"github.com/gpukit/gpukit/pkg/inventory"
)

// EtcdBackup is `gpukit etcd backup`: a snapshot of the cluster's etcd,
// taken on the first control plane and copied to this machine.
type EtcdBackup struct {
	Flow
	Backup *etcd.Backup
}

// NewEtcdBackup builds the flow for the Kubernetes cluster of inv, the
// snapshot copied to the file to.
func NewEtcdBackup(inv *inventory.Inventory, to string) (*EtcdBackup, error) {
	cp, err := etcdControlPlane(inv)
	if err != nil {
		return nil, err
	}
	b := etcd.NewBackup(inv, to, firstControlPlane(inv))
	return &EtcdBackup{Backup: b, Flow: Flow{Name: "gpukit etcd backup", Machines: []inventory.Machine{cp}, Phases: b.Phases()}}, nil
}

// etcdControlPlane is the first control plane of a Kubernetes inventory:
// swarm keeps its state in its managers' raft log, no etcd.
func etcdControlPlane(inv *inventory.Inventory) (inventory.Machine, error) {
	if inv.Cluster.Spec.Orchestrator != inventory.Kubernetes {
		return inventory.Machine{}, fmt.Errorf("spec.orchestrator is %s: a swarm keeps its state in its managers' raft log, not in etcd", inv.Cluster.Spec.Orchestrator)
	}
	cp, ok := kubeadm.FirstControlPlane(inv)
	if !ok {
		return inventory.Machine{}, fmt.Errorf("the inventory has no control plane")
	}
	return cp, nil
}

// Result is the backup's final object.
func (b *EtcdBackup) Result(sum *engine.Summary, dryRun bool) *EtcdBackupResult {
	file, sha, size, host := b.Backup.Taken()
	return &EtcdBackupResult{Header: NewHeader(KindEtcdBackup), DryRun: dryRun, Hosts: sum.HostCounts(),
		File: file, SHA256: sha, Bytes: size, ControlPlane: host}
}

// EtcdBackupResult is etcd backup's final object: where the snapshot was
// written, its sha256 (also in File+".sha256") and size.
type EtcdBackupResult struct {
	Header
	DryRun       bool             `json:"dryRun,omitempty"`
	Hosts        event.HostCounts `json:"hosts"`
	File         string           `json:"file,omitempty"`
	SHA256       string           `json:"sha256,omitempty"`
	Bytes        int64            `json:"bytes,omitempty"`
	ControlPlane string           `json:"controlPlane,omitempty"`
}

// EtcdRestore is `gpukit etcd restore`: every control plane's member
// restored from a snapshot gpukit etcd backup wrote.
type EtcdRestore struct {
	Flow
	Restore *etcd.Restore
	from    string
	sum     string
}

// NewEtcdRestore builds the flow for the Kubernetes cluster of inv from the
// snapshot from, which must match the sha256 beside it (from.sha256): a
// snapshot that does not is refused here, an *InputError, before any host
// is reached.
func NewEtcdRestore(inv *inventory.Inventory, from string) (*EtcdRestore, error) {
	if _, err := etcdControlPlane(inv); err != nil {
		return nil, badInput(err)
	}
	sum, _, err := etcd.ReadSum(from)
	if err != nil {
		return nil, badInput(fmt.Errorf("--from: %w", err))
	}
	return etcdRestore(inv, from, sum), nil
}

// ListEtcdRestore is the restore's flow as --list-phases shows it: no
// snapshot is read.
func ListEtcdRestore(inv *inventory.Inventory) (Flow, error) {
	if _, err := etcdControlPlane(inv); err != nil {
		return Flow{}, err
	}
	return etcdRestore(inv, "snapshot.db", "").Flow, nil
}

func etcdRestore(inv *inventory.Inventory, from, sum string) *EtcdRestore {
	var cps []inventory.Machine
	for _, m := range inv.Machines {
		if m.HasRole(inventory.RoleControlPlane) {
			cps = append(cps, m)
		}
	}
	r := etcd.NewRestore(inv, from, sum, firstControlPlane(inv), time.Now())
	return &EtcdRestore{Restore: r, from: from, sum: sum, Flow: Flow{Name: "gpukit etcd restore", Machines: cps, Phases: r.Phases()}}
}

// Result is the restore's final object.
func (r *EtcdRestore) Result(sum *engine.Summary, dryRun bool) *EtcdRestoreResult {
	c := r.Restore.Result()
	return &EtcdRestoreResult{Header: NewHeader(KindEtcdRestore), DryRun: dryRun, Hosts: sum.HostCounts(),
		From: r.from, SHA256: r.sum, Members: c.Members, Healthy: c.Healthy, Nodes: c.Nodes}
}

// EtcdRestoreResult is etcd restore's final object: the snapshot restored
// and what the check found (members started, healthy, nodes listed).
type EtcdRestoreResult struct {
	Header
	DryRun  bool             `json:"dryRun,omitempty"`
	Hosts   event.HostCounts `json:"hosts"`
	From    string           `json:"from"`
	SHA256  string           `json:"sha256"`
	Members int              `json:"members"`
	Healthy int              `json:"healthy"`
	Nodes   int              `json:"nodes"`
}
