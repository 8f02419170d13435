package flow

import (
	"github.com/gpukit/gpukit/pkg/bootstrap/kubeadm"
	"github.com/gpukit/gpukit/pkg/event"
	"github.com/gpukit/gpukit/pkg/gpuhealth"
	"github.com/gpukit/gpukit/pkg/kubeflow"
	"github.com/gpukit/gpukit/pkg/swarmapi"
	"github.com/gpukit/gpukit/pkg/swarmplatform"
	"github.com/gpukit/gpukit/pkg/verify"
)

// VerifyResult is `gpukit verify`'s final object: each GPU node's tests
// (passed, warning, failed, or not run, with why) and the test across
// nodes. Passed only when every test that was asked for ran and passed.
type VerifyResult struct {
	Header
	Passed bool `json:"passed"`
	// Failed are the nodes with a failed test; NotRun says which tests did
	// not run where, and why.
	Failed  []string      `json:"failed,omitempty"`
	NotRun  []string      `json:"notRun,omitempty"`
	Nodes   []verify.Node `json:"nodes"`
	Cluster verify.Test   `json:"cluster"`
	DryRun  bool          `json:"dryRun,omitempty"`
}

// ResultAPIVersion versions every command's final object (-o json: the last
// line, after the events). A field keeps its meaning within a version;
// scripts check apiVersion before they read one.
const ResultAPIVersion = "gpukit.dev/v1alpha1"

// Kind names a final object: its "type".
type Kind string

// The kinds of final objects, one per command that has a result of its own
// beyond the run's summary (run_done carries the host counts).
const (
	KindInit             Kind = "init"
	KindAddNode          Kind = "add-node"
	KindKubernetesStatus Kind = "kubernetes-status"
	KindSwarmStatus      Kind = "swarm-status"
	KindUpgrade          Kind = "upgrade"
	KindKubeflowDeploy   Kind = "kubeflow-deploy"
	KindPlatformDeploy   Kind = "platform-deploy"
	KindPlatformStatus   Kind = "platform-status"
	KindKubeflowStatus   Kind = "kubeflow-status"
	KindReset            Kind = "reset"
	KindPhases           Kind = "phases"
	KindVerify           Kind = "verify"
	KindBundleList       Kind = "bundle-list"
	KindBundleCreate     Kind = "bundle-create"
	KindEtcdBackup       Kind = "etcd-backup"
	KindEtcdRestore      Kind = "etcd-restore"
)

// Header starts every final object.
type Header struct {
	Type       Kind   `json:"type"`
	APIVersion string `json:"apiVersion"`
}

// Result is a command's final object.
type Result interface {
	ResultKind() Kind
}

// NewHeader starts a final object of kind k.
func NewHeader(k Kind) Header { return Header{Type: k, APIVersion: ResultAPIVersion} }

// ResultKind is the object's kind.
func (h Header) ResultKind() Kind { return h.Type }

// Files are what a run wrote on this machine (mode 0600 each).
type Files struct {
	// Kubeconfig is the cluster's admin kubeconfig (kubernetes).
	Kubeconfig string `json:"kubeconfig,omitempty"`
	// Merged is the user's kubeconfig it was merged into
	// (--merge-kubeconfig), with the context it became.
	Merged *MergedKubeconfig `json:"merged,omitempty"`
	// Credentials holds the logins the run generated (Grafana, Kubeflow).
	Credentials string `json:"credentials,omitempty"`
}

// MergedKubeconfig says where the admin kubeconfig was merged.
type MergedKubeconfig struct {
	Path    string `json:"path"`
	Context string `json:"context"`
	// Changed is false when the file held it already.
	Changed bool `json:"changed"`
}

// InitResult is init's (and plan's) final object; add-node's too, with its
// own kind.
type InitResult struct {
	Header
	DryRun bool `json:"dryRun,omitempty"`
	// Stopped is true when preflight stopped the run before anything was
	// installed (its report came before this object).
	Stopped bool             `json:"stoppedAtPreflight,omitempty"`
	Hosts   event.HostCounts `json:"hosts"`
	Files   Files            `json:"files"`
}

// NewInitResult is the result of init (add=false) or add-node (add=true).
func NewInitResult(add, dryRun bool) *InitResult {
	k := KindInit
	if add {
		k = KindAddNode
	}
	return &InitResult{Header: NewHeader(k), DryRun: dryRun}
}

// KubernetesStatus is status's final object on Kubernetes.
type KubernetesStatus struct {
	Header
	Healthy bool `json:"healthy"`
	// Problems say what is unhealthy, each naming its host, node or GPU.
	Problems []string             `json:"problems,omitempty"`
	Nodes    []kubeadm.NodeStatus `json:"nodes"`
	GPUs     []gpuhealth.HostGPUs `json:"gpus"`
	// Unanswered are the DCGM exporters that run but did not answer: a
	// warning, not a problem.
	Unanswered []string `json:"dcgmUnanswered,omitempty"`
}

// SwarmStatus is status's final object on a swarm.
type SwarmStatus struct {
	Header
	Healthy  bool                 `json:"healthy"`
	Problems []string             `json:"problems,omitempty"`
	Nodes    []swarmapi.Node      `json:"nodes"`
	GPUs     []gpuhealth.HostGPUs `json:"gpus"`
	// Platform is the platform's services and URLs; nil when the first
	// manager did not answer.
	Platform *swarmplatform.Status `json:"platform,omitempty"`
}

// UpgradeResult is upgrade driver's final object.
type UpgradeResult struct {
	Header
	// Complete: every node asked for runs the new versions.
	Complete bool `json:"complete"`
	// Order is the nodes in the order the rollout took them; Waves how
	// many waves that made.
	Order []string `json:"order"`
	Waves int      `json:"waves"`
	// Snapshot is the etcd snapshot taken before the first node.
	Snapshot string `json:"etcdSnapshot,omitempty"`
	// State is the rollout's state file (--resume reads it).
	State string `json:"state,omitempty"`
	// Record is what spec.versions should say now; Written the inventory
	// it was written to (--write-inventory).
	Record  []string `json:"record"`
	Written string   `json:"inventoryWritten,omitempty"`
	// Unfinished says why nodes still run the old versions.
	Unfinished  []string         `json:"unfinished,omitempty"`
	APIRequests int              `json:"apiRequests"`
	DryRun      bool             `json:"dryRun,omitempty"`
	Hosts       event.HostCounts `json:"hosts"`
}

// KubeflowDeployResult is kubeflow deploy's final object.
type KubeflowDeployResult struct {
	Header
	DryRun bool             `json:"dryRun,omitempty"`
	Hosts  event.HostCounts `json:"hosts"`
	Files  Files            `json:"files"`
}

// PlatformDeployResult is platform deploy's final object.
type PlatformDeployResult struct {
	Header
	DryRun bool             `json:"dryRun,omitempty"`
	Hosts  event.HostCounts `json:"hosts"`
	Files  Files            `json:"files"`
	// URLs are the platform's web UIs.
	URLs []string `json:"urls,omitempty"`
}

// PlatformStatusResult is platform status's final object: the swarm's
// platform, or Kubernetes' (as kubeflow status reads it).
type PlatformStatusResult struct {
	Header
	Healthy    bool                  `json:"healthy"`
	Swarm      *swarmplatform.Status `json:"swarm,omitempty"`
	Kubernetes *kubeflow.Status      `json:"kubernetes,omitempty"`
}

// KubeflowStatusResult is kubeflow status's final object.
type KubeflowStatusResult struct {
	Header
	Healthy bool `json:"healthy"`
	*kubeflow.Status
}

// ResetResult is reset's final object.
type ResetResult struct {
	Header
	DryRun bool `json:"dryRun,omitempty"`
	// Reset are the hosts the reset was for.
	Reset []string         `json:"reset"`
	Hosts event.HostCounts `json:"hosts"`
}
