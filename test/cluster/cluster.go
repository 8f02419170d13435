// Package cluster gives tests a real Kubernetes control plane on loopback:
// etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok,
// each its own process, built from Go modules in test/k8s (its own Go
// module: k8s.io/kubernetes never enters gpukit's go.mod). GPU nodes are
// Node objects that kwok runs: pods that fit are scheduled and reach
// Running, pods over capacity stay Pending. Test tooling only.
//
// Building the binaries takes about 5 minutes cold (cached after, keyed by
// test/k8s's go.sum), so tests run only where that is expected: with
// GPUKIT_LAB=1 (CI, make test) or GPUKIT_K8S=1; GPUKIT_LAB=0 (make unit)
// and a plain go test skip them with a message.
package cluster

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gpukit/gpukit/test/fixtures"
)

// Options configure a control plane.
type Options struct {
	// Webhooks keeps the admission webhooks on. Off by default: kwok runs no
	// pod for real, so no webhook server can answer.
	Webhooks bool
}

// Cluster is a running control plane.
type Cluster struct {
	// Kubeconfig is the admin kubeconfig (system:masters).
	Kubeconfig string
	// Dir holds the logs, certificates and etcd data.
	Dir string
	bin string
}

// Require skips t unless the control plane is expected to be built and run
// (GPUKIT_LAB=1 or GPUKIT_K8S=1).
func Require(t testing.TB) {
	t.Helper()
	if os.Getenv("GPUKIT_K8S") == "1" || os.Getenv("GPUKIT_LAB") == "1" {
		return
	}
	t.Skip("the test control plane is built from Kubernetes' Go modules (about 5 minutes the first time): set GPUKIT_K8S=1 or GPUKIT_LAB=1 (make test does)")
}

// builds are test/k8s/build.sh's outputs by set, each built once per
// process.
var builds struct {
	mu   sync.Mutex
	sets map[string]*build
}

type build struct {
	once sync.Once
	dir  string
	err  error
}

// Binaries builds (or finds in the cache) the control plane's binaries,
// once per process, and returns their directory. They are also the newest
// Kubernetes' lab packages (Build(t, "")).
func Binaries(t testing.TB) string {
	t.Helper()
	return Build(t, "")
}

// Build builds (or finds in the cache) one set of test/k8s/build.sh, once
// per process, and returns its directory: "" the newest Kubernetes (with the
// control plane), "vX.Y.Z" another version, "runtime" containerd, runc,
// crictl and CoreDNS.
func Build(t testing.TB, set string) string {
	t.Helper()
	builds.mu.Lock()
	if builds.sets == nil {
		builds.sets = map[string]*build{}
	}
	b := builds.sets[set]
	if b == nil {
		b = &build{}
		builds.sets[set] = b
	}
	builds.mu.Unlock()
	b.once.Do(func() {
		script, err := buildScript()
		if err != nil {
			b.err = err
			return
		}
		var out, errb bytes.Buffer
		cmd := exec.Command(script)
		if set != "" {
			cmd.Args = append(cmd.Args, set)
		}
		cmd.Stdout, cmd.Stderr = &out, &errb
		start := time.Now()
		if err := cmd.Run(); err != nil {
			b.err = fmt.Errorf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, tail(errb.String(), 40))
			return
		}
		b.dir = strings.TrimSpace(out.String())
		if d := time.Since(start); d > 10*time.Second {
			t.Logf("built %s in %s: %s", strings.Join(cmd.Args[1:], " "), d.Round(time.Second), b.dir)
		}
	})
	if b.err != nil {
		t.Fatalf("test/k8s build: %v", b.err)
	}
	return b.dir
}

// versions is build.sh versions' answer, read once per process.
var versions struct {
	once sync.Once
	list []string
	err  error
}

// Versions are the Kubernetes versions test/k8s has modules for, newest
// first.
func Versions(t testing.TB) []string {
	t.Helper()
	versions.once.Do(func() {
		script, err := buildScript()
		if err != nil {
			versions.err = err
			return
		}
		out, err := exec.Command(script, "versions").Output()
		if err != nil {
			versions.err = fmt.Errorf("%s versions: %w", script, err)
			return
		}
		versions.list = strings.Fields(string(out))
	})
	if versions.err != nil || len(versions.list) == 0 {
		t.Fatalf("test/k8s versions: %v", versions.err)
	}
	return versions.list
}

// BuildVersion is Build of Kubernetes version v (one of Versions): the
// newest is the control plane's set ("").
func BuildVersion(t testing.TB, v string) string {
	t.Helper()
	if v == Versions(t)[0] {
		return Build(t, "")
	}
	return Build(t, v)
}

// buildScript is test/k8s/build.sh of this source tree (also from a program
// built with -trimpath, as the demo builds its tools: see fixtures.Root).
func buildScript() (string, error) {
	root, err := fixtures.Root()
	if err != nil {
		return "", fmt.Errorf("locating test/k8s/build.sh: %w", err)
	}
	p := filepath.Join(root, "test", "k8s", "build.sh")
	if _, err := os.Stat(p); err != nil {
		return "", err
	}
	return p, nil
}

// Start runs a control plane for t and stops it when t ends. It dies with
// the test process too (a crashed test leaves nothing running).
func Start(t testing.TB, o Options) *Cluster {
	t.Helper()
	Require(t)
	bin := Binaries(t)
	dir := t.TempDir()
	args := []string{"up", "-dir", dir, "-bin", bin, "-owner-pid", strconv.Itoa(os.Getpid())}
	if o.Webhooks {
		args = append(args, "-webhooks")
	}
	cmd := exec.Command(filepath.Join(bin, "kube-env"), args...)
	log, err := os.Create(filepath.Join(dir, "kube-env.out"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = log, log
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); log.Close(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	c := &Cluster{Kubeconfig: filepath.Join(dir, "kubeconfig"), Dir: dir, bin: bin}
	deadline := time.After(3 * time.Minute)
	for {
		if _, err := os.Stat(filepath.Join(dir, "ready")); err == nil {
			break
		}
		select {
		case <-exited:
			out, _ := os.ReadFile(filepath.Join(dir, "kube-env.out"))
			t.Fatalf("the test control plane did not start:\n%s", tail(string(out), 30))
		case <-deadline:
			t.Fatalf("the test control plane was not ready within 3 minutes (logs in %s)", dir)
		case <-time.After(100 * time.Millisecond):
		}
	}
	t.Logf("test control plane ready in %s (%s)", time.Since(start).Round(10*time.Millisecond), dir)
	return c
}

// GPUNode is a node kwok runs, with GPU capacity.
type GPUNode struct {
	Name string
	// GPUs is its nvidia.com/gpu capacity; 0 makes a CPU node.
	GPUs int
	// Product and MemoryMiB are GPU feature discovery's labels; defaults
	// NVIDIA-H100-80GB-HBM3, 81559.
	Product   string
	MemoryMiB int
	Labels    map[string]string
	// Taint the node so that only pods tolerating kwok's taint land on it.
	Taint bool
}

// AddNode adds n and waits until it is Ready.
func (c *Cluster) AddNode(t testing.TB, n GPUNode) {
	t.Helper()
	args := []string{"node", "-kubeconfig", c.Kubeconfig, "-name", n.Name, "-gpus", strconv.Itoa(n.GPUs)}
	if n.Product != "" {
		args = append(args, "-product", n.Product)
	}
	if n.MemoryMiB > 0 {
		args = append(args, "-memory-mib", strconv.Itoa(n.MemoryMiB))
	}
	for k, v := range n.Labels {
		args = append(args, "-label", k+"="+v)
	}
	if n.Taint {
		args = append(args, "-taint")
	}
	if out, err := exec.Command(filepath.Join(c.bin, "kube-env"), args...).CombinedOutput(); err != nil {
		t.Fatalf("add node %s: %v\n%s", n.Name, err, out)
	}
}

// RESTConfig is a client configuration for the admin kubeconfig, at 50
// requests a second (client-go's 5 would make a Kubeflow apply crawl).
func (c *Cluster) RESTConfig(t testing.TB) *rest.Config {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 50, 100
	return cfg
}

// Kubectl runs the kubectl of the control plane's version against it and
// returns its output; an error fails t.
func (c *Cluster) Kubectl(t testing.TB, args ...string) string {
	t.Helper()
	out, err := c.TryKubectl(args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// TryKubectl runs kubectl and returns its output and error.
func (c *Cluster) TryKubectl(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(c.bin, "kubectl"), append([]string{"--kubeconfig", c.Kubeconfig}, args...)...)
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// Apply applies manifest (YAML) with kubectl.
func (c *Cluster) Apply(t testing.TB, manifest string) {
	t.Helper()
	f := filepath.Join(t.TempDir(), "manifest.yaml")
	if err := os.WriteFile(f, []byte(manifest), 0o600); err != nil {
		t.Fatal(err)
	}
	c.Kubectl(t, "apply", "-f", f)
}

func tail(s string, lines int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(l) > lines {
		l = l[len(l)-lines:]
	}
	return strings.Join(l, "\n")
}
