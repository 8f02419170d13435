package scripts

import (
	"fmt"
	"net"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/gpukit/gpukit/manifests"
	"github.com/gpukit/gpukit/pkg/osfamily"
	"github.com/gpukit/gpukit/pkg/ssh"
)

// The swarm layer's scripts (pkg/bootstrap/swarm decides, these render).
var (
	dockerEngineTemplate     = parse[DockerEngineParams]("docker-engine.sh")
	dockerConfigTemplate     = parse[BackupParams]("docker-config.sh")
	swarmStateTemplate       = parse[SwarmStateParams]("swarm-state.sh")
	swarmInitTemplate        = parse[SwarmAddrParams]("swarm-init.sh")
	swarmJoinTemplate        = parse[SwarmAddrParams]("swarm-join.sh")
	swarmTokenTemplate       = parse[NoParams]("swarm-token.sh")
	swarmNodesTemplate       = parse[NoParams]("swarm-nodes.sh")
	swarmNodeUpdateTemplate  = parse[NoParams]("swarm-node-update.sh")
	swarmNodeRemoveTemplate  = parse[NoParams]("swarm-node-remove.sh")
	swarmResetTemplate       = parse[BackupParams]("swarm-reset.sh")
	swarmNodeTasksTemplate   = parse[NoParams]("swarm-node-tasks.sh")
	dockerCheckpointTemplate = parse[DockerCheckpointParams]("docker-checkpoint.sh")
)

// Docker engine sources.
const (
	DockerCE           = "docker-ce"    // Docker's repository (download.docker.com or a mirror)
	DockerDistribution = "distribution" // the OS's own packages (Debian's docker.io)
)

var (
	dockerVersion = regexp.MustCompile(`^[0-9]+\.[0-9]+(\.[0-9]+)?$`)
	// a registry's CA where docker reads it: certs.d/<host[:port]>/
	mirrorCAFile = regexp.MustCompile(`^/etc/docker/certs\.d/[A-Za-z0-9.-]+(:[0-9]+)?/gpukit-mirror-ca\.crt$`)
	swarmNodeID  = regexp.MustCompile(`^[a-z0-9]{25}$`)
)

// DockerEngineParams install the Docker engine.
type DockerEngineParams struct {
	Family osfamily.Info
	// Source is DockerCE or DockerDistribution.
	Source string
	// RepoURL is Docker's repository for the family, ending in "/"
	// (https://download.docker.com/linux/ubuntu/); DockerCE only.
	RepoURL string
	// Key is that repository's signing key (DockerCE).
	Key manifests.SigningKey
	// Version is the engine's upstream version (28.2.2); Packages are pinned
	// to it. Empty (distribution only): what the OS ships.
	Version string
	// Packages are pinned to Version and held.
	Packages []string
	// Extra are installed and held, not pinned (containerd.io has its own
	// versions).
	Extra []string
}

// Validate checks every value that reaches the script.
func (p DockerEngineParams) Validate() error {
	if err := checkPinned(p.Family, p.Packages, p.Extra); err != nil {
		return err
	}
	if p.Version != "" && !dockerVersion.MatchString(p.Version) {
		return fmt.Errorf("docker version %q", p.Version)
	}
	switch p.Source {
	case DockerCE:
		if p.Version == "" {
			return fmt.Errorf("no docker version")
		}
		if err := manifests.CheckSigningKey(p.Key); err != nil {
			return fmt.Errorf("docker repository: %w", err)
		}
		return checkBaseURL("docker repository", p.RepoURL)
	case DockerDistribution:
		if p.RepoURL != "" {
			return fmt.Errorf("a repository for the distribution's packages")
		}
		return nil
	}
	return fmt.Errorf("docker source %q", p.Source)
}

// DockerEngine returns the command that installs, holds and starts the
// Docker engine.
func DockerEngine(p DockerEngineParams) (ssh.Command, error) {
	return command("install the docker engine", dockerEngineTemplate, p)
}

// SwarmStateParams read the swarm layer's state of a host.
type SwarmStateParams struct {
	Family osfamily.Info
	// Packages are the Docker packages whose version and hold are read.
	Packages []string
	// BackupDir is where gpukit keeps the originals of the files it changed.
	BackupDir string
}

// Validate checks the family, package names and directory.
func (p SwarmStateParams) Validate() error {
	if err := checkFamily(p.Family); err != nil {
		return err
	}
	if err := (BackupParams{p.BackupDir}).Validate(); err != nil {
		return err
	}
	return checkPackages(p.Packages)
}

// SwarmState returns the read-only command that prints the host's Docker
// packages, configuration files and swarm membership.
func SwarmState(p SwarmStateParams) (ssh.Command, error) {
	return command("read the docker state", swarmStateTemplate, p)
}

// BackupParams name where the originals of the files gpukit changes are kept.
type BackupParams struct{ BackupDir string }

// Validate checks the directory.
func (p BackupParams) Validate() error {
	if !filePath.MatchString(p.BackupDir) {
		return fmt.Errorf("backup directory %q", p.BackupDir)
	}
	return nil
}

// DockerConfig returns the command that writes daemon.json, the NVIDIA
// runtime's config.toml (empty: left alone) and the registry mirror's CA
// at caFile (empty: none), and restarts docker if daemon.json or the
// runtime's configuration changed (Docker reads a registry's CAs at each
// pull). The contents travel as arguments (stdin).
func DockerConfig(p BackupParams, daemonJSON, runtimeTOML, caFile, ca string) (ssh.Command, error) {
	c, err := command("configure docker", dockerConfigTemplate, p)
	if err == nil && caFile != "" && !mirrorCAFile.MatchString(caFile) {
		err = fmt.Errorf("CA file %q", caFile)
	}
	c.Args = []string{daemonJSON, runtimeTOML, caFile, ca}
	return c, err
}

// SwarmAddrParams are a node's swarm addresses: its own and, to join, a
// manager's (host:port).
type SwarmAddrParams struct {
	AdvertiseAddr string
	ListenAddr    string
	Manager       string
}

// Validate checks that the addresses are IPs (and host:port pairs).
func (p SwarmAddrParams) Validate() error {
	if _, err := netip.ParseAddr(p.AdvertiseAddr); err != nil {
		return fmt.Errorf("advertise address %q: %w", p.AdvertiseAddr, err)
	}
	pairs := []string{p.ListenAddr}
	if p.Manager != "" {
		pairs = append(pairs, p.Manager)
	}
	for _, hp := range pairs {
		host, port, err := net.SplitHostPort(hp)
		if err == nil {
			_, err = strconv.ParseUint(port, 10, 16)
		}
		if err == nil {
			_, err = netip.ParseAddr(host)
		}
		if err != nil {
			return fmt.Errorf("address %q: want IP:port", hp)
		}
	}
	return nil
}

// SwarmInit returns the command that creates the swarm on the first manager.
func SwarmInit(p SwarmAddrParams) (ssh.Command, error) {
	if p.Manager != "" {
		return ssh.Command{}, fmt.Errorf("script swarm-init.sh: a manager to join")
	}
	return command("create the swarm", swarmInitTemplate, p)
}

// swarmToken is a join token as docker makes it, or a plan's stand-in for
// one (<worker join token of m1>): either goes into JSON as it is.
var swarmToken = regexp.MustCompile(`^(SWMTKN-[0-9A-Za-z-]+|<[0-9A-Za-z .:_-]+>)$`)

// SwarmJoin returns the command that joins the swarm through p.Manager with
// token (an argument: stdin, never in the script or on a command line of
// gpukit's).
func SwarmJoin(p SwarmAddrParams, token string) (ssh.Command, error) {
	if p.Manager == "" {
		return ssh.Command{}, fmt.Errorf("script swarm-join.sh: no manager to join")
	}
	// The script writes it into a JSON request as it is.
	if !swarmToken.MatchString(token) {
		return ssh.Command{}, fmt.Errorf("script swarm-join.sh: the join token is not one docker makes (SWMTKN-...)")
	}
	c, err := command("join the swarm", swarmJoinTemplate, p)
	c.Args = []string{token}
	return c, err
}

// SwarmToken returns the read that prints the join token for role
// ("worker" or "manager"). Its output is a secret.
func SwarmToken(role string) (ssh.Command, error) {
	if role != "worker" && role != "manager" {
		return ssh.Command{}, fmt.Errorf("swarm role %q", role)
	}
	c, err := command("read the "+role+" join token", swarmTokenTemplate, NoParams{})
	c.Args = []string{role}
	return c, err
}

// SwarmNodes returns the read that prints `docker node inspect` of the
// nodes ids, or of every node.
func SwarmNodes(ids ...string) (ssh.Command, error) {
	return nodesCommand("read the swarm's nodes", swarmNodesTemplate, ids)
}

// nodesCommand is a script that takes node IDs as its arguments, each
// checked: they reach the manager's shell.
func nodesCommand(name string, t *Template[NoParams], ids []string) (ssh.Command, error) {
	for _, id := range ids {
		if !swarmNodeID.MatchString(id) {
			return ssh.Command{}, fmt.Errorf("swarm node ID %q", id)
		}
	}
	c, err := command(name, t, NoParams{})
	c.Args = ids
	return c, err
}

// NodeUpdate is one node's `docker node update` options.
type NodeUpdate struct {
	ID      string
	Options []string
}

// SwarmNodeUpdate returns the command that applies updates on a manager.
func SwarmNodeUpdate(updates []NodeUpdate) (ssh.Command, error) {
	c, err := command("update swarm nodes", swarmNodeUpdateTemplate, NoParams{})
	for _, u := range updates {
		if !swarmNodeID.MatchString(u.ID) {
			return ssh.Command{}, fmt.Errorf("swarm node ID %q", u.ID)
		}
		c.Args = append(c.Args, u.ID, strconv.Itoa(len(u.Options)))
		c.Args = append(c.Args, u.Options...)
	}
	return c, err
}

// SwarmNodeRemove returns the command that removes nodes from the swarm's
// list on a manager.
func SwarmNodeRemove(ids []string) (ssh.Command, error) {
	return nodesCommand("remove nodes from the swarm", swarmNodeRemoveTemplate, ids)
}

// SwarmReset returns the command that leaves the swarm and restores the
// files gpukit changed.
func SwarmReset(p BackupParams) (ssh.Command, error) {
	return command("leave the swarm and restore docker's configuration", swarmResetTemplate, p)
}

// SwarmNodeTasks returns the read, on a manager, that prints the tasks of
// the nodes ids and their services.
func SwarmNodeTasks(ids ...string) (ssh.Command, error) {
	if len(ids) == 0 {
		return ssh.Command{}, fmt.Errorf("no swarm node to read the tasks of")
	}
	return nodesCommand("read the nodes' tasks", swarmNodeTasksTemplate, ids)
}

var (
	containerID = regexp.MustCompile(`^[0-9a-f]{64}$`)
	signalName  = regexp.MustCompile(`^SIG[A-Z0-9]+$`)
)

// DockerCheckpointParams ask a container to checkpoint: Signal sent to its
// main process, or Command run in it within Timeout.
type DockerCheckpointParams struct {
	Container string
	Signal    string
	Command   string
	Timeout   time.Duration
}

// Validate checks the container ID and that exactly one of the signal and
// the command is given.
func (p DockerCheckpointParams) Validate() error {
	switch {
	case !containerID.MatchString(p.Container):
		return fmt.Errorf("container ID %q", p.Container)
	case (p.Signal == "") == (p.Command == ""):
		return fmt.Errorf("a checkpoint is a signal or a command, one of them")
	case p.Signal != "" && !signalName.MatchString(p.Signal):
		return fmt.Errorf("signal %q", p.Signal)
	case p.Command != "" && p.Timeout < time.Second:
		return fmt.Errorf("checkpoint timeout %s: want 1s or more", p.Timeout)
	case strings.ContainsRune(p.Command, 0):
		return fmt.Errorf("checkpoint command with a NUL byte")
	}
	return nil
}

// DockerCheckpoint returns the command, run on the container's host, that
// asks it to checkpoint. The values travel as arguments (stdin).
func DockerCheckpoint(p DockerCheckpointParams) (ssh.Command, error) {
	c, err := command("checkpoint container", dockerCheckpointTemplate, p)
	c.Args = []string{p.Container, p.Signal, p.Command, strconv.Itoa(int(p.Timeout / time.Second))}
	return c, err
}

// The swarm platform's scripts (pkg/swarmplatform decides, these render).
var (
	swarmPlatformStateTemplate  = parse[SwarmPlatformParams]("swarm-platform-state.sh")
	swarmStackDeployTemplate    = parse[SwarmPlatformParams]("swarm-stack-deploy.sh")
	swarmPlatformRemoveTemplate = parse[SwarmPlatformParams]("swarm-platform-remove.sh")
)

// StackFiles is the tar of a stack's files in its directory, unpacked by
// the deploy.
const StackFiles = "files.tar"

// SwarmPlatformParams place the swarm platform on its manager.
type SwarmPlatformParams struct {
	// Dir holds a directory per stack: its stack.yml, configs and secrets.
	Dir string
	// Network is the attachable overlay network the stacks share.
	Network string
	// StackLabel labels the platform's configs and secrets with their stack.
	StackLabel string
	// PasswordFile, CertFile and KeyFile are the Grafana password's and the
	// ingress certificate's files, relative to Dir.
	PasswordFile, CertFile, KeyFile string
	// TimeoutSeconds bounds the removal's waits.
	TimeoutSeconds int
	// StackFiles is set by SwarmStackDeploy to the constant StackFiles.
	StackFiles string
}

var dockerName = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)

// Validate checks every value that reaches the scripts.
func (p SwarmPlatformParams) Validate() error {
	if !filePath.MatchString(p.Dir) {
		return fmt.Errorf("platform directory %q", p.Dir)
	}
	for _, n := range []string{p.Network, p.StackLabel} {
		if !dockerName.MatchString(n) {
			return fmt.Errorf("docker name %q", n)
		}
	}
	for _, f := range []string{p.PasswordFile, p.CertFile, p.KeyFile} {
		if !filePath.MatchString("/" + f) {
			return fmt.Errorf("platform file %q", f)
		}
	}
	if p.TimeoutSeconds < 0 {
		return fmt.Errorf("timeout %d", p.TimeoutSeconds)
	}
	return nil
}

// SwarmPlatformState returns the read-only command that prints the swarm
// platform's state on the first manager.
func SwarmPlatformState(p SwarmPlatformParams) (ssh.Command, error) {
	return command("read the platform's stacks", swarmPlatformStateTemplate, p)
}

// SwarmStackDeploy returns the command that deploys stack (its files
// uploaded under p.Dir/stack) and waits up to timeout for it to run.
func SwarmStackDeploy(p SwarmPlatformParams, stack string, timeout time.Duration) (ssh.Command, error) {
	p.StackFiles = StackFiles
	c, err := command("deploy stack "+stack, swarmStackDeployTemplate, p)
	if err == nil && !dockerName.MatchString(stack) {
		err = fmt.Errorf("stack name %q", stack)
	}
	c.Args = []string{stack, strconv.Itoa(int(timeout.Seconds()))}
	return c, err
}

// SwarmPlatformRemove returns the command that removes the stacks and
// everything of the platform on the manager.
func SwarmPlatformRemove(p SwarmPlatformParams, stacks []string) (ssh.Command, error) {
	c, err := command("remove the platform's stacks", swarmPlatformRemoveTemplate, p)
	for _, s := range stacks {
		if err == nil && !dockerName.MatchString(s) {
			err = fmt.Errorf("stack name %q", s)
		}
	}
	c.Args = stacks
	return c, err
}
