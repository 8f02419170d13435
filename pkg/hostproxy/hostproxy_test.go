package hostproxy_test

import (
	"context"
	"strings"
	"testing"

	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/engine/enginetest"
	"github.com/gpukit/gpukit/pkg/hostproxy"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/ssh"
)

const doc = `apiVersion: gpukit.dev/v1alpha1
kind: Cluster
metadata: {name: lab}
spec:
  proxy: {http: "http://proxy.example.com:3128", noProxy: [mirror.example.com]}
  hosts:
    - {name: cp-1, address: 10.0.0.10, nodeAddress: 10.10.0.10, roles: [control-plane]}
    - {name: gpu-1, address: 10.0.0.11, roles: [worker], proxy: {}}
`

// host is what a fake host answers: whether gpukit's proxy file is there
// (the probe) and what its check prints.
type host struct {
	proxyFile bool
	pending   string
}

func run(t *testing.T, hosts map[string]host, phase func(*hostproxy.Layer) engine.Phase, dryRun bool) (*enginetest.Fleet, *engine.Summary) {
	t.Helper()
	inv, err := inventory.Parse("test.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	fleet := &enginetest.Fleet{Handler: func(_ context.Context, e *enginetest.Executor, cmd ssh.Command) (ssh.Result, error) {
		h := hosts[e.Host]
		switch {
		case cmd.Name == "probe facts":
			out := "os.id=debian\nos.version=12\n"
			if h.proxyFile {
				out += "gpukit.proxy=true\n"
			}
			return ssh.Result{Stdout: []byte(out)}, nil
		case strings.HasPrefix(cmd.Name, "read "):
			return ssh.Result{Stdout: []byte(h.pending)}, nil
		}
		return ssh.Result{}, nil
	}}
	r := &engine.Runner{Name: "test", Phases: []engine.Phase{phase(hostproxy.New(inv))}, Sink: &enginetest.Recorder{}, DryRun: dryRun}
	sum, err := r.Run(context.Background(), inv.Machines, fleet.Dial)
	if err != nil {
		t.Fatal(err)
	}
	return fleet, sum
}

func names(fleet *enginetest.Fleet, host string) string {
	return strings.Join(fleet.Executor(host).Names(), ", ")
}

func TestApply(t *testing.T) {
	for _, tt := range []struct {
		name      string
		hosts     map[string]host
		dryRun    bool
		cp1, gpu1 string
		changed   int
	}{
		{"fresh hosts: the proxy host is set, the direct one needs no check",
			map[string]host{"cp-1": {pending: "pending: /etc/gpukit/proxy.env\n"}}, false,
			"probe facts, read the host's proxy settings, point the host at the proxy", "probe facts", 1},
		{"converged: reads only",
			map[string]host{}, false,
			"probe facts, read the host's proxy settings", "probe facts", 0},
		{"a proxy taken out of the inventory is removed",
			map[string]host{"gpu-1": {proxyFile: true, pending: "pending: /etc/gpukit/proxy.env present\n"}}, false,
			"probe facts, read the host's proxy settings", "probe facts, read the proxy settings left, remove the proxy settings", 1},
		{"dry-run writes nothing",
			map[string]host{"cp-1": {pending: "pending: /etc/gpukit/proxy.env\n"}, "gpu-1": {proxyFile: true, pending: "pending: x present\n"}}, true,
			"probe facts, read the host's proxy settings", "probe facts, read the proxy settings left", 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fleet, sum := run(t, tt.hosts, (*hostproxy.Layer).Apply, tt.dryRun)
			if got := names(fleet, "cp-1"); got != tt.cp1 {
				t.Errorf("cp-1 ran %q, want %q", got, tt.cp1)
			}
			if got := names(fleet, "gpu-1"); got != tt.gpu1 {
				t.Errorf("gpu-1 ran %q, want %q", got, tt.gpu1)
			}
			if c := sum.HostCounts(); c.Changed != tt.changed && !tt.dryRun {
				t.Errorf("counts %+v, want %d changed", c, tt.changed)
			}
		})
	}
}

// What the kubelet and containerd get: the proxy, and past it the site's
// list, the hosts' names and both addresses, the cluster's networks.
func TestApplyScript(t *testing.T) {
	fleet, _ := run(t, map[string]host{"cp-1": {pending: "pending: x\n"}}, (*hostproxy.Layer).Apply, false)
	var script string
	for _, c := range fleet.Executor("cp-1").Commands() {
		if c.Name == "point the host at the proxy" {
			script = c.Script
		}
	}
	for _, want := range []string{
		`Environment="HTTPS_PROXY=http://proxy.example.com:3128"`,
		`NO_PROXY=mirror.example.com,localhost,127.0.0.1,::1,cp-1,gpu-1,10.0.0.10/31,10.10.0.10,10.244.0.0/16,10.96.0.0/12,.svc,.cluster.local`,
		`Acquire::http::Proxy::mirror.example.com "DIRECT";`,
		`units=(containerd kubelet)`,
	} {
		if !strings.Contains(script, want) {
			t.Errorf("the script lacks %s:\n%s", want, script)
		}
	}
}

func TestRemove(t *testing.T) {
	fleet, sum := run(t, map[string]host{"cp-1": {proxyFile: true, pending: "pending: /etc/gpukit/proxy.env present\n"}}, (*hostproxy.Layer).Remove, false)
	if got := names(fleet, "cp-1"); got != "probe facts, read the proxy settings left, remove the proxy settings" {
		t.Errorf("cp-1 ran %q", got)
	}
	if got := names(fleet, "gpu-1"); got != "probe facts" {
		t.Errorf("gpu-1 (nothing of gpukit's) ran %q", got)
	}
	if c := sum.HostCounts(); c.Changed != 1 {
		t.Errorf("counts %+v", c)
	}
}
