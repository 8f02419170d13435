package swarm

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/facts"
	"github.com/gpukit/gpukit/pkg/swarmapi"
	"github.com/gpukit/gpukit/test/golden"
)

func TestDaemonConfig(t *testing.T) {
	t.Parallel()
	gpus := []string{"GPU-aaaa", "GPU-bbbb"}
	tests := []struct {
		name     string
		current  string
		uuids    []string
		insecure string
		changed  bool
		err      string
	}{
		{name: "no file", uuids: gpus, changed: true},
		{name: "user settings kept", current: `{"log-level": "warn", "data-root": "/data/docker", "registry-mirrors": ["https://mirror.example"]}`, uuids: gpus, changed: true},
		{name: "other kinds kept, stale GPUs replaced", current: `{"node-generic-resources": ["SSD=fast", "NVIDIA-GPU=GPU-gone"]}`, uuids: gpus, changed: true},
		{name: "nvidia-ctk's runtime entry kept", current: `{"runtimes": {"nvidia": {"args": [], "path": "/usr/bin/nvidia-container-runtime"}, "crun": {"path": "/usr/bin/crun"}}}`, uuids: gpus, changed: true},
		{name: "converged, other formatting", current: `{"default-runtime":"nvidia","node-generic-resources":["NVIDIA-GPU=GPU-aaaa","NVIDIA-GPU=GPU-bbbb"],"runtimes":{"nvidia":{"path":"nvidia-container-runtime","runtimeArgs":[]}}}`, uuids: gpus},
		{name: "no GPU, no file", changed: false},
		{name: "no GPU left: GPUs no longer advertised", current: `{"default-runtime": "nvidia", "node-generic-resources": ["NVIDIA-GPU=GPU-gone"]}`, changed: true},
		{name: "a plain-HTTP mirror added to the user's insecure registries", current: `{"insecure-registries": ["10.0.0.9:5000"]}`, insecure: "10.251.0.1:5000", changed: true},
		{name: "the mirror already insecure", current: `{"insecure-registries": ["10.251.0.1:5000"]}`, insecure: "10.251.0.1:5000"},
		{name: "insecure registries not a list", current: `{"insecure-registries": "x"}`, insecure: "10.251.0.1:5000", err: "insecure-registries is not a list of strings"},
		{name: "not JSON", current: `{"log-level": `, uuids: gpus, err: "/etc/docker/daemon.json is not a JSON object"},
		{name: "resources not a list", current: `{"node-generic-resources": "NVIDIA-GPU=x"}`, uuids: gpus, err: "node-generic-resources is not a list of strings"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var cur []byte
			if tt.current != "" {
				cur = []byte(tt.current)
			}
			out, changed, err := DaemonConfig(cur, tt.uuids, tt.insecure)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || changed != tt.changed {
				t.Fatalf("changed %v, err %v; want changed %v", changed, err, tt.changed)
			}
			golden.Assert(t, filepath.Join("testdata", "daemon.json", fileName(tt.name)+".json"), out)
			// Merging again changes nothing.
			if _, again, err := DaemonConfig(out, tt.uuids, tt.insecure); again || err != nil {
				t.Errorf("second merge: changed %v, err %v", again, err)
			}
		})
	}
}

func TestRuntimeTOML(t *testing.T) {
	t.Parallel()
	const nvidiaDefault = `#accept-nvidia-visible-devices-as-volume-mounts = false
#swarm-resource = "DOCKER_RESOURCE_GPU"

[nvidia-container-cli]
ldconfig = "@/sbin/ldconfig.real"
`
	tests := []struct {
		name, current, want string
		changed             bool
	}{
		{"NVIDIA's commented default", nvidiaDefault, strings.Replace(strings.TrimRight(nvidiaDefault, "\n"), `#swarm-resource = "DOCKER_RESOURCE_GPU"`, `swarm-resource = "DOCKER_RESOURCE_NVIDIA-GPU"`, 1), true},
		{"another kind set", "swarm-resource = \"DOCKER_RESOURCE_GPU\"\n[x]\n", "swarm-resource = \"DOCKER_RESOURCE_NVIDIA-GPU\"\n[x]", true},
		{"absent: goes first", "[nvidia-container-runtime]\nmode = \"auto\"\n", "swarm-resource = \"DOCKER_RESOURCE_NVIDIA-GPU\"\n[nvidia-container-runtime]\nmode = \"auto\"", true},
		{"only top-level lines count", "[t]\nswarm-resource = \"x\"\n", "swarm-resource = \"DOCKER_RESOURCE_NVIDIA-GPU\"\n[t]\nswarm-resource = \"x\"", true},
		{"converged", "swarm-resource = \"DOCKER_RESOURCE_NVIDIA-GPU\"\n[x]\n", "swarm-resource = \"DOCKER_RESOURCE_NVIDIA-GPU\"\n[x]", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out, changed := RuntimeTOML([]byte(tt.current), swarmapi.GPUKind)
			if string(out) != tt.want || changed != tt.changed {
				t.Errorf("got changed %v:\n%s\nwant changed %v:\n%s", changed, out, tt.changed, tt.want)
			}
		})
	}
	if out, changed := RuntimeTOML(nil, swarmapi.GPUKind); out != nil || changed {
		t.Errorf("a missing file: %q %v", out, changed)
	}
	if got := ResourceEnv("gpu"); got != "DOCKER_RESOURCE_GPU" {
		t.Errorf("ResourceEnv(gpu) = %s", got)
	}
}

// fileName turns a test name into a portable file name.
func fileName(name string) string {
	return strings.Trim(regexp.MustCompile(`[^a-z0-9]+`).ReplaceAllString(strings.ToLower(name), "-"), "-")
}

// A GPU with MIG on is advertised as its MIG devices (their UUIDs are what
// the NVIDIA runtime hands a container); one with MIG on and no device is
// not advertised; a GPU without MIG as itself.
func TestGPUUUIDsWithMIG(t *testing.T) {
	h := &engine.Host{Facts: &facts.Facts{GPUs: []facts.GPU{
		{Index: 0, UUID: "GPU-a", MIGMode: "Enabled", MIGDevices: []facts.MIGDevice{{Profile: "3g.40gb", UUID: "MIG-1"}, {Profile: "3g.40gb", UUID: "MIG-2"}}},
		{Index: 1, UUID: "GPU-b", MIGMode: "Enabled"},
		{Index: 2, UUID: "GPU-c", MIGMode: "Disabled"},
		{Index: 3, UUID: "GPU-d"},
	}}}
	got, err := gpuUUIDs(h)
	if err != nil || strings.Join(got, ",") != "MIG-1,MIG-2,GPU-c,GPU-d" {
		t.Errorf("gpuUUIDs = %v, %v", got, err)
	}
}
