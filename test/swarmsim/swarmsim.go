// Package swarmsim is a fake Docker Swarm for gpukit's unit tests: the
// docker of each host as the swarm layer's and the rollout's scripts (pkg/
// scripts, swarm-*.sh and docker-*.sh) see it, and the swarm as its
// managers keep it: nodes, their labels, roles and availability, tasks and
// their services. Test tooling only, imported by _test.go files and never
// shipped; the lab tests run the same scripts on real dockerd.
//
// It answers each script by its command name and prints what a manager's
// docker prints, in the forms pkg/swarmapi (ParseNodes, ParseTasks) and
// pkg/bootstrap/swarm (the docker state) read. The hosts under docker are
// the GPU simulator's (test/gpusim/scriptsim): their facts, GPUs and
// NVIDIA scripts are answered there.
//
// Swarm.Handle serves an enginetest fleet (a host's own connection);
// Swarm.Remote serves an engine.RemoteFunc (commands run on a manager on
// another phase's behalf).
package swarmsim

import (
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/engine/enginetest"
	"github.com/gpukit/gpukit/pkg/ssh"
	"github.com/gpukit/gpukit/pkg/swarmapi"
	"github.com/gpukit/gpukit/test/gpusim/scriptsim"
)

// Swarm is one swarm and the hosts that run docker for it. Tests set up
// and inspect its exported fields between runs.
type Swarm struct {
	// Token is the join token for workers, ManagerToken the managers'.
	Token, ManagerToken string
	// Nodes are the swarm's nodes as its managers keep them, in join order.
	Nodes []*Node
	// Tasks are the tasks on the nodes.
	Tasks []*Task
	// Updates are the node updates made, each "ID OPTIONS...".
	Updates []string

	mu       sync.Mutex
	driver   string
	gpus     map[string][]string
	hosts    map[string]*Host
	commands int
	// joining are the managers joining now, joinPeak the most at once.
	joining, joinPeak int
}

// Host is one host: the machine and its docker.
type Host struct {
	// Machine is the host as the GPU simulator models it: it answers the
	// host's facts and NVIDIA scripts.
	Machine scriptsim.Host
	// Docker: the engine is installed and runs.
	Docker bool
	// DaemonJSON and RuntimeConfig are /etc/docker/daemon.json and
	// /etc/nvidia-container-runtime/config.toml ("": none).
	DaemonJSON, RuntimeConfig string
	// State is docker info's LocalNodeState ("inactive", "active"), NodeID
	// its node and Manager whether it is one (ControlAvailable).
	State, NodeID string
	Manager       bool
	// RemoteManagers replace the managers the host knows (a host of another
	// swarm); nil: this swarm's.
	RemoteManagers []Peer
}

// Peer is a manager a node knows.
type Peer struct{ NodeID, Addr string }

// Node is a node of the swarm.
type Node struct {
	ID, Hostname, Addr string
	// Role is "manager" or "worker" (""); Availability "active", "pause"
	// or "drain"; State "ready" or "down".
	Role, Availability, State string
	// GPUs are the node's NVIDIA-GPU resources (UUIDs): what its
	// daemon.json advertises, for the nodes hosts joined.
	GPUs   []string
	Labels map[string]string
}

// Task is a task of a service on a node.
type Task struct {
	ID, Node string
	// Service is its service's name, Mode the service's mode (replicated,
	// global, replicated-job, global-job), Labels the service's labels.
	Service, Mode string
	Labels        map[string]string
	// State is the task's; DesiredState what swarm wants of it ("":
	// running).
	State, DesiredState string
	Slot                int
	// GPUs are the NVIDIA-GPU resources the swarm assigned it.
	GPUs []string
}

// DefaultRuntimeConfig is the NVIDIA runtime's configuration as the
// container toolkit installs it.
const DefaultRuntimeConfig = "#swarm-resource = \"DOCKER_RESOURCE_GPU\"\n[nvidia-container-runtime]\n"

// Options set up a swarm's hosts.
type Options struct {
	// Token is the workers' join token (default one of docker's form); the
	// managers' is it with "-manager" after it.
	Token string
	// GPUs are, by host, the UUIDs of its GPUs; the other hosts have none.
	GPUs map[string][]string
	// Driver is the NVIDIA driver the GPU hosts run (and the container
	// toolkit with it); "": none yet, nvidia-smi lists no GPU.
	Driver string
}

// New is a swarm of no node yet; its hosts have docker to install.
func New(o Options) *Swarm {
	if o.Token == "" {
		o.Token = "SWMTKN-1-" + strings.Repeat("0", 50) + "-" + strings.Repeat("1", 25)
	}
	return &Swarm{Token: o.Token, ManagerToken: o.Token + "-manager", driver: o.Driver, gpus: o.GPUs, hosts: map[string]*Host{}}
}

// Host is the host called name.
func (s *Swarm) Host(name string) *Host {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.host(name)
}

func (s *Swarm) host(name string) *Host {
	if h := s.hosts[name]; h != nil {
		return h
	}
	h := &Host{State: "inactive", Machine: scriptsim.CPU()}
	if uuids, ok := s.gpus[name]; ok {
		h.Machine = scriptsim.Fresh(len(uuids))
		if s.driver != "" {
			h.Machine = scriptsim.Installed(s.driver, len(uuids))
			h.RuntimeConfig = DefaultRuntimeConfig
		}
		h.Machine.UUIDs = uuids
	}
	s.hosts[name] = h
	return h
}

// Node is the node with id (nil: none).
func (s *Swarm) Node(id string) *Node {
	for _, n := range s.Nodes {
		if n.ID == id {
			return n
		}
	}
	return nil
}

// NodeID is the ID of the node host joins as.
func NodeID(host string) string {
	return ("id" + strings.ReplaceAll(host, "-", "") + strings.Repeat("0", 25))[:25]
}

// Commands is how many commands the swarm's hosts answered.
func (s *Swarm) Commands() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.commands
}

// ManagerJoinPeak is the most managers that joined at once.
func (s *Swarm) ManagerJoinPeak() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.joinPeak
}

// Handle answers cmd on the host e stands for (an enginetest.Handler).
func (s *Swarm) Handle(ctx context.Context, e *enginetest.Executor, cmd ssh.Command) (ssh.Result, error) {
	return s.run(ctx, e.Host, cmd)
}

// Remote runs commands on host (a manager) for another host's phase.
func (s *Swarm) Remote(host string) engine.RemoteFunc {
	return func(ctx context.Context, cmd ssh.Command) (ssh.Result, error) { return s.run(ctx, host, cmd) }
}

var (
	initAddr = regexp.MustCompile(`--advertise-addr '?([^' ]+)'?`)
	joinAddr = regexp.MustCompile(`"JoinToken":"%s"}' \S+ '?([^' ]+)'? "\$manager"`)
)

func (s *Swarm) run(_ context.Context, name string, cmd ssh.Command) (ssh.Result, error) {
	s.mu.Lock()
	if cmd.Name == "join the swarm" && len(cmd.Args) > 0 && cmd.Args[0] == s.ManagerToken {
		// A manager's join takes a moment, unlocked: joins that overlap
		// show in the peak.
		s.joining++
		s.joinPeak = max(s.joinPeak, s.joining)
		s.mu.Unlock()
		time.Sleep(20 * time.Millisecond)
		s.mu.Lock()
		s.joining--
	}
	defer s.mu.Unlock()
	s.commands++
	h := s.host(name)
	switch cmd.Name {
	case "probe facts":
		res, err := h.Machine.Run(name, cmd)
		if err == nil && h.Docker {
			res.Stdout = fmt.Appendf(res.Stdout, "runtime=dockerd Docker version 20.10.24+dfsg1, build 297e128\nswarm=%s\n", h.State)
		}
		return res, err
	case "read the docker state":
		var b strings.Builder
		if h.Docker {
			b.WriteString("package=docker.io 20.10.24+dfsg1-1+deb12u1 true\ndocker.active=active\n")
			m, _ := json.Marshal(map[string]any{"NodeID": h.NodeID, "LocalNodeState": h.State, "ControlAvailable": h.Manager, "RemoteManagers": s.remoteManagers(h)})
			fmt.Fprintf(&b, "swarm=%s\n", base64.StdEncoding.EncodeToString(m))
		}
		for path, content := range map[string]string{"/etc/docker/daemon.json": h.DaemonJSON, "/etc/nvidia-container-runtime/config.toml": h.RuntimeConfig} {
			if content != "" {
				fmt.Fprintf(&b, "file %s=%s\n", path, base64.StdEncoding.EncodeToString([]byte(content)))
			}
		}
		return ok(b.String())
	case "install the docker engine":
		h.Docker = true
		return ok("")
	case "configure docker":
		h.DaemonJSON = cmd.Args[0]
		if cmd.Args[1] != "" {
			h.RuntimeConfig = cmd.Args[1]
		}
		if n := s.Node(h.NodeID); n != nil {
			n.GPUs = advertised(h.DaemonJSON) // docker restarts, the node advertises them
		}
		return ok("gpukit: docker restarted\n")
	case "create the swarm":
		if h.State == "active" {
			return ok("node=" + h.NodeID + "\n")
		}
		addr := initAddr.FindStringSubmatch(cmd.Script)
		if addr == nil {
			return fail(cmd, 2, "swarmsim: no --advertise-addr in the script")
		}
		s.joined(name, h, "manager", addr[1])
		return ok("gpukit: swarm created\nnode=" + h.NodeID + "\n")
	case "read the worker join token", "read the manager join token":
		if !h.Manager {
			return fail(cmd, 1, "Error response from daemon: This node is not a swarm manager.")
		}
		if cmd.Args[0] == "manager" {
			return ok(s.ManagerToken + "\n")
		}
		return ok(s.Token + "\n")
	case "join the swarm":
		if h.State == "active" {
			return ok("node=" + h.NodeID + "\n")
		}
		role := map[string]string{s.Token: "worker", s.ManagerToken: "manager"}[cmd.Args[0]]
		if role == "" {
			return fail(cmd, 1, "gpukit: joining the swarm failed: HTTP/1.1 400 Bad Request: invalid join token")
		}
		addr := joinAddr.FindStringSubmatch(cmd.Script)
		if addr == nil {
			return fail(cmd, 2, "swarmsim: no advertise address in the script")
		}
		s.joined(name, h, role, addr[1])
		return ok("gpukit: joined the swarm\nnode=" + h.NodeID + "\n")
	case "read the swarm's nodes":
		return ok(string(s.inspectNodes(cmd.Args)))
	case "read the nodes' tasks":
		return ok(s.nodeTasks(cmd.Args))
	case "update swarm nodes":
		return s.update(cmd)
	}
	return h.Machine.Run(name, cmd)
}

func ok(out string) (ssh.Result, error) { return ssh.Result{Stdout: []byte(out)}, nil }

func fail(cmd ssh.Command, code int, stderr string) (ssh.Result, error) {
	return ssh.Result{ExitCode: code, Stderr: []byte(stderr)}, &ssh.ExitError{Command: cmd.Name, Code: code, StderrTail: stderr}
}

// joined makes host name a node of the swarm.
func (s *Swarm) joined(name string, h *Host, role, addr string) {
	h.State, h.NodeID, h.Manager = "active", NodeID(name), role == "manager"
	s.Nodes = append(s.Nodes, &Node{ID: h.NodeID, Hostname: name, Addr: addr, Role: role, Availability: "active", State: "ready",
		GPUs: advertised(h.DaemonJSON)})
}

// advertised are the GPUs a daemon.json advertises.
func advertised(daemonJSON string) []string {
	var cfg struct {
		Resources []string `json:"node-generic-resources"`
	}
	_ = json.Unmarshal([]byte(daemonJSON), &cfg)
	var out []string
	for _, r := range cfg.Resources {
		if v, ok := strings.CutPrefix(r, swarmapi.GPUKind+"="); ok {
			out = append(out, v)
		}
	}
	return out
}

func (s *Swarm) remoteManagers(h *Host) []Peer {
	if h.State != "active" {
		return nil
	}
	if h.RemoteManagers != nil {
		return h.RemoteManagers
	}
	var out []Peer
	for _, n := range s.Nodes {
		if n.Role == "manager" {
			out = append(out, Peer{NodeID: n.ID, Addr: n.Addr + ":2377"})
		}
	}
	return out
}

// inspectNodes is docker node inspect of the nodes ids (none: all).
func (s *Swarm) inspectNodes(ids []string) []byte {
	list := []map[string]any{}
	leader := true
	for _, n := range s.Nodes {
		if len(ids) > 0 && !slices.Contains(ids, n.ID) {
			continue
		}
		var res []map[string]any
		for _, g := range n.GPUs {
			res = append(res, map[string]any{"NamedResourceSpec": map[string]string{"Kind": swarmapi.GPUKind, "Value": g}})
		}
		node := map[string]any{"ID": n.ID,
			"Spec":        map[string]any{"Role": cmp.Or(n.Role, "worker"), "Availability": n.Availability, "Labels": n.Labels},
			"Description": map[string]any{"Hostname": n.Hostname, "Resources": map[string]any{"GenericResources": res}},
			"Status":      map[string]any{"State": n.State, "Addr": n.Addr}}
		if n.Role == "manager" {
			node["ManagerStatus"] = map[string]any{"Leader": leader, "Reachability": "reachable", "Addr": n.Addr + ":2377"}
			leader = false
		}
		list = append(list, node)
	}
	b, _ := json.Marshal(list)
	return b
}

// history are the task states swarm-node-tasks.sh leaves out.
var history = []string{"shutdown", "failed", "rejected", "remove", "orphaned"}

// nodeTasks is swarm-node-tasks.sh: the tasks of the nodes ids, then their
// services. A drained node's running tasks are shut down at the next look.
func (s *Swarm) nodeTasks(ids []string) string {
	var out bytes.Buffer
	services := map[string]*Task{}
	for _, id := range ids {
		node := s.Node(id)
		for _, t := range s.Tasks {
			if t.Node != id {
				continue
			}
			if node != nil && node.Availability == "drain" && t.State == "running" {
				t.State = "shutdown"
			}
			if slices.Contains(history, t.State) {
				continue
			}
			var assigned []map[string]any
			for _, g := range t.GPUs {
				assigned = append(assigned, map[string]any{"NamedResourceSpec": map[string]string{"Kind": swarmapi.GPUKind, "Value": g}})
			}
			spec := map[string]any{"ContainerSpec": map[string]any{"Labels": nil, "Env": nil}}
			if len(t.GPUs) > 0 {
				spec["Resources"] = map[string]any{"Reservations": map[string]any{"GenericResources": []map[string]any{
					{"DiscreteResourceSpec": map[string]any{"Kind": swarmapi.GPUKind, "Value": len(t.GPUs)}}}}}
			}
			b, _ := json.Marshal(map[string]any{"ID": t.ID, "ServiceID": "svc-" + t.Service, "NodeID": t.Node, "Slot": t.Slot,
				"DesiredState": cmp.Or(t.DesiredState, "running"), "Spec": spec, "GenericResources": assigned,
				"Status": map[string]any{"State": t.State, "ContainerStatus": map[string]string{"ContainerID": strings.Repeat("c", 64)}}})
			fmt.Fprintf(&out, "task=%s\n", b)
			services[t.Service] = t
		}
	}
	for _, name := range slices.Sorted(maps.Keys(services)) {
		t := services[name]
		mode := map[string]string{"replicated": "Replicated", "global": "Global", "replicated-job": "ReplicatedJob", "global-job": "GlobalJob"}[cmp.Or(t.Mode, "replicated")]
		b, _ := json.Marshal(map[string]any{"ID": "svc-" + name, "Spec": map[string]any{"Name": name, "Labels": t.Labels, "Mode": map[string]any{mode: map[string]any{}}}})
		fmt.Fprintf(&out, "service=%s\n", b)
	}
	return out.String()
}

// update is swarm-node-update.sh: per node its ID, a count, the options.
func (s *Swarm) update(cmd ssh.Command) (ssh.Result, error) {
	var out strings.Builder
	for a := cmd.Args; len(a) > 0; {
		id := a[0]
		n, err := strconv.Atoi(a[1])
		if err != nil || 2+n > len(a) {
			return fail(cmd, 2, "swarmsim: bad arguments")
		}
		opts := a[2 : 2+n]
		a = a[2+n:]
		node := s.Node(id)
		if node == nil {
			return fail(cmd, 1, "Error response from daemon: node "+id+" not found")
		}
		// docker changes the node's spec whole, or not at all
		spec := *node
		spec.Labels = maps.Clone(node.Labels)
		for i := 0; i+1 < len(opts); i += 2 {
			switch v := opts[i+1]; opts[i] {
			case "--availability":
				spec.Availability = v
			case "--label-add":
				k, val, _ := strings.Cut(v, "=")
				if spec.Labels == nil {
					spec.Labels = map[string]string{}
				}
				spec.Labels[k] = val
			case "--label-rm":
				if _, ok := spec.Labels[v]; !ok {
					return fail(cmd, 1, "key "+v+" doesn't exist in node's labels")
				}
				delete(spec.Labels, v)
			case "--role":
				spec.Role = v
			}
		}
		*node = spec
		if h := s.hosts[node.Hostname]; h != nil && h.NodeID == id {
			h.Manager = node.Role == "manager"
		}
		s.Updates = append(s.Updates, id+" "+strings.Join(opts, " "))
		fmt.Fprintf(&out, "gpukit: node %s: %s\n", id, strings.Join(opts, " "))
	}
	return ok(out.String())
}
