package kubeadm

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
	"github.com/gpukit/gpukit/pkg/imageref"
	"github.com/gpukit/gpukit/test/golden"
)

// Each case renders config.toml from a host's file (testdata/containerd/
// <in>.in.toml, or none) into testdata/containerd/<name>.toml; rendering
// the result again must give the same bytes (a converged host is left
// alone).
func TestContainerdConfig(t *testing.T) {
	gpu := ContainerdSettings{SandboxImage: "registry.k8s.io/pause:3.10.1", SystemdCgroup: true, NVIDIA: true, NVIDIADefault: true}
	lab := ContainerdSettings{SandboxImage: "registry.k8s.io/pause:3.10.1", RestrictOOMScoreAdj: true, NVIDIA: true, NVIDIADefault: true}
	noGPU := ContainerdSettings{SandboxImage: "registry.k8s.io/pause:3.10.1", SystemdCgroup: true}
	class := gpu
	class.NVIDIADefault = false
	for _, c := range []struct {
		name, in string
		major    int
		s        ContainerdSettings
	}{
		{"v2-no-file-gpu", "", 2, gpu},
		{"v1-no-file-no-gpu", "", 1, noGPU},
		{"v2-docker-containerd.io-lab", "docker-containerd.io", 2, lab},
		{"v1-user-v2-runtime-class", "user-v2", 1, class},
		{"v2-user-v2-kept-v2", "user-v2", 2, gpu},
		{"v2-user-v3-gpu-gone", "user-v3", 2, noGPU},
	} {
		t.Run(c.name, func(t *testing.T) {
			var in []byte
			if c.in != "" {
				var err error
				if in, err = os.ReadFile(filepath.Join("testdata", "containerd", c.in+".in.toml")); err != nil {
					t.Fatal(err)
				}
			}
			out, err := ContainerdConfig(in, c.major, c.s)
			if err != nil {
				t.Fatal(err)
			}
			golden.Assert(t, filepath.Join("testdata", "containerd", c.name+".toml"), out)
			again, err := ContainerdConfig(out, c.major, c.s)
			if err != nil {
				t.Fatal(err)
			}
			if string(again) != string(out) {
				t.Errorf("rendering the output again changes it:\n%s", golden.Diff("first", string(out), string(again)))
			}
			var doc map[string]any
			if _, err := toml.Decode(string(out), &doc); err != nil {
				t.Fatalf("output is not TOML: %v", err)
			}
			if list, _ := doc["disabled_plugins"].([]any); slices.Contains(list, any("cri")) {
				t.Error("the CRI plugin is still disabled")
			}
		})
	}
}

func TestContainerdConfigRefuses(t *testing.T) {
	for _, c := range []struct {
		name, in string
		major    int
		want     string
	}{
		{"v3 file under containerd 1", "version = 3\n", 1, "is a version 3 configuration; containerd 1.x reads version 2"},
		{"containerd 3", "", 3, "gpukit configures containerd 1.x and 2.x"},
		{"not TOML", "version = = 2", 2, ContainerdConfigFile},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ContainerdConfig([]byte(c.in), c.major, ContainerdSettings{SandboxImage: "registry.k8s.io/pause:3.10.1"})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want %q", err, c.want)
			}
		})
	}
}

func TestMirrorHostsFiles(t *testing.T) {
	for _, c := range []struct {
		name, mirror string
		ca           []byte
		auth         string
	}{
		{"https-path", "registry.example.com/mirror", nil, ""},
		{"http-port", "http://10.251.0.1:5000", nil, ""},
		// its own CA, a login (the golden file holds a made-up one)
		{"https-ca-login", "10.251.0.1:5443/lab", []byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"), "Basic cm9ib3Q6ZXhhbXBsZQ=="},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := imageref.ParseMirror(c.mirror)
			m.CA, m.Authorization = c.ca, c.auth
			files := HostsFiles(m)
			var b strings.Builder
			paths := make([]string, 0, len(files))
			for p := range files {
				paths = append(paths, p)
			}
			slices.Sort(paths)
			for _, p := range paths {
				b.WriteString("==> " + p + "\n" + files[p] + "\n")
				if strings.HasSuffix(p, "/ca.crt") {
					continue
				}
				if _, err := toml.Decode(files[p], new(map[string]any)); err != nil {
					t.Errorf("%s is not TOML: %v", p, err)
				}
			}
			golden.AssertString(t, filepath.Join("testdata", "containerd", "hosts-"+c.name+".txt"), b.String())
		})
	}
	if got := imageref.ParseMirror("http://10.251.0.1:5000/lab").Ref("registry.k8s.io", "pause:3.10.1"); got != "10.251.0.1:5000/lab/registry.k8s.io/pause:3.10.1" {
		t.Errorf("Ref = %s", got)
	}
}
