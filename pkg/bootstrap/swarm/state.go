package swarm

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/gpukit/gpukit/pkg/facts"
	"github.com/gpukit/gpukit/pkg/osfamily"
)

// Files gpukit reads and changes on a swarm host.
const (
	DaemonJSON    = "/etc/docker/daemon.json"
	RuntimeConfig = "/etc/nvidia-container-runtime/config.toml"
	// BackupDir keeps the files as they were before gpukit first changed
	// them; gpukit reset puts them back.
	BackupDir = "/var/lib/gpukit/swarm/originals"
)

// Package is an installed package.
type Package = osfamily.Package

// Membership is the node's part in a swarm, as `docker info` shows it.
type Membership struct {
	NodeID           string
	NodeAddr         string
	LocalNodeState   string // inactive, pending, active, error, locked
	ControlAvailable bool   // a manager
	Error            string
	RemoteManagers   []struct{ NodeID, Addr string }
}

// Active reports whether the node is in a swarm.
func (m *Membership) Active() bool { return m != nil && m.LocalNodeState == "active" }

// State is what the swarm layer reads from a host (scripts swarm-state.sh).
type State struct {
	Packages     map[string]Package
	DockerActive string
	// Files are the configuration files present, by path.
	Files map[string][]byte
	// Backups are the originals gpukit kept (file names in BackupDir).
	Backups []string
	// Swarm is nil when docker does not answer.
	Swarm *Membership
}

// ParseState reads the state script's output.
func ParseState(out []byte) (*State, error) {
	s := &State{Packages: map[string]Package{}, Files: map[string][]byte{}}
	err := facts.ScanKV(out, "docker state", func(key, value string) error {
		switch {
		case key == "package":
			f := strings.Fields(value)
			if len(f) != 3 {
				return fmt.Errorf("package %q: want NAME VERSION HELD", value)
			}
			s.Packages[f[0]] = Package{Version: f[1], Held: f[2] == "true"}
		case key == "backup":
			s.Backups = append(s.Backups, value)
		case key == "docker.active":
			s.DockerActive = value
		case strings.HasPrefix(key, "file "):
			b, err := base64.StdEncoding.DecodeString(value)
			if err != nil {
				return fmt.Errorf("%s: %w", key, err)
			}
			s.Files[strings.TrimPrefix(key, "file ")] = b
		case key == "swarm":
			b, err := base64.StdEncoding.DecodeString(value)
			if err != nil {
				return fmt.Errorf("swarm: %w", err)
			}
			m := &Membership{}
			if err := json.Unmarshal(b, m); err != nil {
				return fmt.Errorf("swarm: %w", err)
			}
			s.Swarm = m
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// nodeIDFrom finds the "node=ID" line the init and join scripts print last.
func nodeIDFrom(out []byte) string {
	id := ""
	for _, line := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "node="); ok {
			id = v
		}
	}
	return id
}
