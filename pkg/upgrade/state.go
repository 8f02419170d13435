package upgrade

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/gpukit/gpukit/pkg/atomicfile"
	"github.com/gpukit/gpukit/pkg/localdir"
)

// Node statuses in the rollout's state.
const (
	// InProgress: the node was taken out of service (cordoned by gpukit)
	// and not yet given back.
	InProgress = "in-progress"
	Done       = "done"
	Failed     = "failed"
	// Skipped: left alone this run (training that did not finish, cordoned
	// by someone else); a resumed run tries it again.
	Skipped = "skipped"
)

// Target is what a rollout installs.
type Target struct {
	Driver  string `json:"driver"`
	CUDA    string `json:"cuda,omitempty"`
	Toolkit string `json:"toolkit,omitempty"`
	// MIG is a MIG rollout's layouts (a digest of the inventory's), for
	// `gpukit mig apply`: its Driver is then "".
	MIG string `json:"mig,omitempty"`
	// Kubernetes is a Kubernetes upgrade's release (1.37.2), for `gpukit
	// upgrade kubernetes`: its Driver is then "".
	Kubernetes string `json:"kubernetes,omitempty"`
}

// String names the target in messages: the driver, or the MIG layouts.
func (t Target) String() string {
	if t.MIG != "" {
		return "the MIG layouts " + t.MIG
	}
	if t.Kubernetes != "" {
		return "Kubernetes " + t.Kubernetes
	}
	return "driver " + t.Driver
}

// NodeState is one node's progress.
type NodeState struct {
	Status string    `json:"status"`
	Reason string    `json:"reason,omitempty"`
	At     time.Time `json:"at"`
	// Waves is how many waves the node was in (a retried node: more than
	// one).
	Waves int `json:"waves,omitempty"`
}

// State is a rollout's record on this machine, rewritten after every change
// (atomically, 0600): `gpukit upgrade driver --resume` reads it to go on
// without redoing finished nodes, and to give back the nodes a killed run
// left cordoned.
type State struct {
	Cluster   string     `json:"cluster"`
	Inventory string     `json:"inventory"`
	Target    Target     `json:"target"`
	Started   time.Time  `json:"started"`
	Finished  *time.Time `json:"finished,omitempty"`
	// Snapshot is the etcd snapshot taken before the first node
	// (host:path).
	Snapshot string               `json:"etcdSnapshot,omitempty"`
	Nodes    map[string]NodeState `json:"nodes"`

	mu     sync.Mutex // guards the fields above
	saveMu sync.Mutex // one Save at a time
	path   string
}

// DefaultStatePath is where a cluster's rollout state lives.
func DefaultStatePath(cluster string) string { return StatePath(cluster, "driver") }

// StatePath is where a cluster's rollout of one kind (driver, mig) is kept
// by default.
func StatePath(cluster, kind string) string {
	dir := os.Getenv("GPUKIT_STATE_DIR")
	if dir == "" {
		dir = localdir.Dir("upgrades")
	}
	return filepath.Join(dir, cluster+"."+kind+".json")
}

// ErrNoState is LoadState's error when no rollout was recorded.
var ErrNoState = errors.New("no rollout state")

// LoadState reads the state at path.
func LoadState(path string) (*State, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", path, ErrNoState)
	}
	if err != nil {
		return nil, err
	}
	s := &State{}
	if err := json.Unmarshal(b, s); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if s.Nodes == nil {
		s.Nodes = map[string]NodeState{}
	}
	s.path = path
	return s, nil
}

// NewState is a fresh rollout's state, kept at path.
func NewState(path, cluster, inventory string, t Target, now time.Time) *State {
	return &State{Cluster: cluster, Inventory: inventory, Target: t, Started: now, Nodes: map[string]NodeState{}, path: path}
}

// Path is where the state is kept.
func (s *State) Path() string { return s.path }

// Node returns a node's state.
func (s *State) Node(name string) (NodeState, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, ok := s.Nodes[name]
	return n, ok
}

// Names are the nodes with status among statuses, sorted.
func (s *State) Names(statuses ...string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, n := range slices.Sorted(maps.Keys(s.Nodes)) {
		if slices.Contains(statuses, s.Nodes[n].Status) {
			out = append(out, n)
		}
	}
	return out
}

// Set records a node's status and saves the state.
func (s *State) Set(name, status, reason string, now time.Time) error {
	s.mu.Lock()
	n := s.Nodes[name]
	if status == InProgress && n.Status != InProgress {
		n.Waves++
	}
	n.Status, n.Reason, n.At = status, reason, now
	s.Nodes[name] = n
	s.mu.Unlock()
	return s.Save()
}

// Finish marks the rollout over and saves it.
func (s *State) Finish(now time.Time) error {
	s.mu.Lock()
	s.Finished = &now
	s.mu.Unlock()
	return s.Save()
}

// Save writes the state whole (atomicfile): a crash leaves the old state or
// the new, never half of one.
func (s *State) Save() error {
	// One save at a time, each writing what the state holds when it takes
	// its turn: two saves racing could otherwise put the older copy last.
	s.saveMu.Lock()
	defer s.saveMu.Unlock()
	s.mu.Lock()
	b, err := json.MarshalIndent(s, "", "  ")
	path := s.path
	s.mu.Unlock()
	if err != nil {
		return err
	}
	if path == "" {
		return errors.New("rollout state: no path")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return atomicfile.Write(path, append(b, '\n'), 0o600)
}
