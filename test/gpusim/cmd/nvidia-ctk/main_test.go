package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func ctk(t *testing.T, root string, args ...string) (int, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(root, args, &out, &errb)
	return code, out.String() + errb.String()
}

func TestDockerKeepsTheUsersSettings(t *testing.T) {
	root := t.TempDir()
	p := filepath.Join(root, "etc/docker/daemon.json")
	os.MkdirAll(filepath.Dir(p), 0o755)
	os.WriteFile(p, []byte(`{"log-level": "warn", "max-concurrent-downloads": 3, "runtimes": {"crun": {"path": "/usr/bin/crun"}}}`), 0o600)
	if code, out := ctk(t, root, "runtime", "configure", "--runtime=docker", "--set-as-default"); code != 0 {
		t.Fatalf("exit %d: %s", code, out)
	}
	b, _ := os.ReadFile(p)
	var cfg map[string]any
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	rt := cfg["runtimes"].(map[string]any)
	if cfg["log-level"] != "warn" || cfg["max-concurrent-downloads"] != 3.0 || rt["crun"] == nil || cfg["default-runtime"] != "nvidia" {
		t.Errorf("daemon.json:\n%s", b)
	}
	if n := rt["nvidia"].(map[string]any); n["path"] != "nvidia-container-runtime" {
		t.Errorf("nvidia runtime %v", n)
	}
	if st, _ := os.Stat(p); st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want the user's 0600", st.Mode())
	}
	before := string(b)
	ctk(t, root, "runtime", "configure", "--runtime=docker", "--set-as-default")
	if b, _ := os.ReadFile(p); string(b) != before {
		t.Error("a second configure changed daemon.json")
	}
}

func TestContainerdDropIn(t *testing.T) {
	root := t.TempDir()
	top := filepath.Join(root, "etc/containerd/config.toml")
	os.MkdirAll(filepath.Dir(top), 0o755)
	os.WriteFile(top, []byte("version = 2\nroot = \"/var/lib/containerd\"\n\n[plugins]\n  [plugins.\"io.containerd.grpc.v1.cri\"]\n    sandbox_image = \"pause:3.9\"\n"), 0o644)
	if code, out := ctk(t, root, "runtime", "configure", "--runtime=containerd"); code != 0 {
		t.Fatalf("exit %d: %s", code, out)
	}
	b, _ := os.ReadFile(top)
	if !strings.HasPrefix(string(b), "version = 2\nimports = [\"/etc/containerd/conf.d/*.toml\"]\nroot = ") || !strings.Contains(string(b), "sandbox_image") {
		t.Errorf("config.toml:\n%s", b)
	}
	d, _ := os.ReadFile(filepath.Join(root, "etc/containerd/conf.d/99-nvidia.toml"))
	if !strings.Contains(string(d), `[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia.options]`) ||
		!strings.Contains(string(d), `BinaryName = "/usr/bin/nvidia-container-runtime"`) || strings.Contains(string(d), "default_runtime_name") {
		t.Errorf("drop-in:\n%s", d)
	}
	ctk(t, root, "runtime", "configure", "--runtime=containerd")
	if b2, _ := os.ReadFile(top); string(b2) != string(b) {
		t.Errorf("a second configure changed config.toml:\n%s", b2)
	}
	os.WriteFile(top, []byte("version = 3\nimports = [\"/etc/other/*.toml\"]\n"), 0o644)
	ctk(t, root, "runtime", "configure", "--runtime=containerd", "--set-as-default")
	b, _ = os.ReadFile(top)
	d, _ = os.ReadFile(filepath.Join(root, "etc/containerd/conf.d/99-nvidia.toml"))
	if string(b) != "version = 3\nimports = [\"/etc/other/*.toml\", \"/etc/containerd/conf.d/*.toml\"]\n" ||
		!strings.Contains(string(d), `plugins."io.containerd.cri.v1.runtime".containerd`) || !strings.Contains(string(d), `default_runtime_name = "nvidia"`) {
		t.Errorf("version 3:\n%s\n%s", b, d)
	}
}

func TestVersionAndUnsimulated(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "usr/share/gpusim"), 0o755)
	os.WriteFile(filepath.Join(root, "usr/share/gpusim/nvidia-container-toolkit.version"), []byte("1.20.0\n"), 0o644)
	if code, out := ctk(t, root, "--version"); code != 0 || !strings.HasPrefix(out, "NVIDIA Container Toolkit CLI version 1.20.0\n") {
		t.Errorf("exit %d: %q", code, out)
	}
	if code, out := ctk(t, root, "cdi", "generate"); code == 0 || !strings.Contains(out, "not simulated") {
		t.Errorf("exit %d: %q", code, out)
	}
}
