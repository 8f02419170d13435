package kubeadm

// containerd's configuration for a kubeadm node: config.toml rendered from
// what the host has (the user's settings stay), in the schema of the
// installed major, and the registry mirror's hosts.toml files.

import (
	"bytes"
	"fmt"
	"net"
	"path"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/gpukit/gpukit/pkg/imageref"
	"github.com/gpukit/gpukit/pkg/kube"
)

// Files and directories of containerd that gpukit writes.
const (
	ContainerdConfigFile = "/etc/containerd/config.toml"
	// CertsDir holds one directory per registry with its hosts.toml: where
	// containerd pulls that registry's images from.
	CertsDir = "/etc/containerd/certs.d"
	// NVIDIARuntimeBinary is what the NVIDIA Container Toolkit installs:
	// runc's interface, with the GPUs injected.
	NVIDIARuntimeBinary = "/usr/bin/nvidia-container-runtime"
)

// ContainerdSettings are what gpukit sets in containerd's configuration; the
// rest of the file is the user's.
type ContainerdSettings struct {
	// SandboxImage is the pause image kubeadm expects.
	SandboxImage string
	// SystemdCgroup matches the kubelet's cgroup driver.
	SystemdCgroup bool
	// RestrictOOMScoreAdj: spec.kubernetes.containerd.restrictOOMScoreAdj.
	RestrictOOMScoreAdj bool
	// NVIDIA adds the nvidia runtime (hosts with GPUs); NVIDIADefault makes
	// it the default for every container.
	NVIDIA, NVIDIADefault bool
}

// configSchema is where the CRI settings live in one version of containerd's
// configuration file.
type configSchema struct {
	version int
	// images holds the sandbox image and the registry's config_path;
	// runtime the runtimes and restrict_oom_score_adj.
	images, runtime []string
	sandbox         []string // below images
}

var (
	// containerd 1.x: config version 2.
	schemaV2 = configSchema{
		version: 2,
		images:  []string{"plugins", "io.containerd.grpc.v1.cri"},
		runtime: []string{"plugins", "io.containerd.grpc.v1.cri"},
		sandbox: []string{"sandbox_image"},
	}
	// containerd 2.x: config version 3 (it still reads version 2 files).
	schemaV3 = configSchema{
		version: 3,
		images:  []string{"plugins", "io.containerd.cri.v1.images"},
		runtime: []string{"plugins", "io.containerd.cri.v1.runtime"},
		sandbox: []string{"pinned_images", "sandbox"},
	}
)

// ContainerdConfig renders config.toml for containerd major (1 or 2) from
// the host's current file (nil: none). A file of the major's own version (or
// a version 2 file under containerd 2, which reads it) keeps every setting
// gpukit does not own; a file without a version, or Docker's containerd.io
// default (which turns the CRI plugin off), starts afresh. Comments are not
// kept (gpukit keeps the original file). The output is canonical: rendering
// it again gives the same bytes.
func ContainerdConfig(current []byte, major int, s ContainerdSettings) ([]byte, error) {
	var native configSchema
	switch major {
	case 1:
		native = schemaV2
	case 2:
		native = schemaV3
	default:
		return nil, fmt.Errorf("containerd %d.x: gpukit configures containerd 1.x and 2.x", major)
	}
	doc := map[string]any{}
	if len(bytes.TrimSpace(current)) > 0 {
		if _, err := toml.Decode(string(current), &doc); err != nil {
			return nil, fmt.Errorf("%s: %w", ContainerdConfigFile, err)
		}
	}
	schema := native
	switch v, _ := doc["version"].(int64); {
	case v == 0:
		// Version 1 (or Docker's stub): nothing of it is in a schema gpukit
		// can keep apart from what it sets.
		doc = map[string]any{}
	case v == 2 && major == 2:
		schema = schemaV2
	case int(v) != native.version:
		return nil, fmt.Errorf("%s is a version %d configuration; containerd %d.x reads version %d: migrate it (containerd config migrate) or remove it", ContainerdConfigFile, v, major, native.version)
	}
	doc["version"] = int64(schema.version)
	// Docker's containerd.io turns the CRI plugin off; Kubernetes needs it.
	if list, ok := doc["disabled_plugins"].([]any); ok {
		list = slices.DeleteFunc(list, func(p any) bool {
			name, _ := p.(string)
			return name == "cri" || name == "io.containerd.grpc.v1.cri" || strings.HasPrefix(name, "io.containerd.cri.")
		})
		if len(list) == 0 {
			delete(doc, "disabled_plugins")
		} else {
			doc["disabled_plugins"] = list
		}
	}

	images := table(doc, schema.images...)
	set(images, s.SandboxImage, schema.sandbox...)
	set(images, CertsDir, "registry", "config_path")

	rt := table(doc, schema.runtime...)
	set(rt, s.RestrictOOMScoreAdj, "restrict_oom_score_adj")
	defaultRuntime := "runc"
	if s.NVIDIA && s.NVIDIADefault {
		defaultRuntime = kube.NVIDIARuntimeName
	}
	set(rt, defaultRuntime, "containerd", "default_runtime_name")
	set(rt, "io.containerd.runc.v2", "containerd", "runtimes", "runc", "runtime_type")
	set(rt, s.SystemdCgroup, "containerd", "runtimes", "runc", "options", "SystemdCgroup")
	if s.NVIDIA {
		set(rt, "io.containerd.runc.v2", "containerd", "runtimes", kube.NVIDIARuntimeName, "runtime_type")
		set(rt, NVIDIARuntimeBinary, "containerd", "runtimes", kube.NVIDIARuntimeName, "options", "BinaryName")
		set(rt, s.SystemdCgroup, "containerd", "runtimes", kube.NVIDIARuntimeName, "options", "SystemdCgroup")
	} else if runtimes, ok := table(rt, "containerd", "runtimes")[kube.NVIDIARuntimeName].(map[string]any); ok {
		// A host without GPUs (any more): a runtime whose binary is not
		// there is kept only when it was not gpukit's.
		if opts, _ := runtimes["options"].(map[string]any); opts["BinaryName"] == NVIDIARuntimeBinary {
			delete(table(rt, "containerd", "runtimes"), kube.NVIDIARuntimeName)
		}
	}

	var b bytes.Buffer
	b.WriteString("# containerd's configuration for Kubernetes, written by gpukit from the file it found\n" +
		"# (kept under " + BackupDir + "): the CRI settings it owns are set, the others kept.\n")
	enc := toml.NewEncoder(&b)
	enc.Indent = ""
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("%s: %w", ContainerdConfigFile, err)
	}
	return b.Bytes(), nil
}

// table returns the table at keys below t, creating what is missing (a
// value that is not a table is replaced: gpukit owns the keys it walks).
func table(t map[string]any, keys ...string) map[string]any {
	for _, k := range keys {
		next, ok := t[k].(map[string]any)
		if !ok {
			next = map[string]any{}
			t[k] = next
		}
		t = next
	}
	return t
}

// set puts v at keys below t.
func set(t map[string]any, v any, keys ...string) {
	table(t, keys[:len(keys)-1]...)[keys[len(keys)-1]] = v
}

// MirroredRegistries are the public registries whose images the registry
// mirror holds, each under a path of its name: what Kubernetes, its CNIs,
// NVIDIA's charts, the platform's and Kubeflow's images pull from (gpukit
// bundle names an image of any other as one it cannot deliver).
var MirroredRegistries = []string{"registry.k8s.io", "docker.io", "ghcr.io", "quay.io", "nvcr.io", "gcr.io", "us-central1-docker.pkg.dev"}

// HostsFiles are the files, by path, that make containerd pull each
// mirrored registry's images from the mirror (and fall back to the registry
// itself, where a site can reach it), and the mirror's own images
// (spec.kubernetes.imageRepository pointing into it) over its scheme: a
// hosts.toml per registry, trusting the mirror's CA (ca.crt beside the
// mirror's own hosts.toml) and sending its login to the mirror only.
func HostsFiles(m imageref.Mirror) map[string]string {
	out := map[string]string{}
	mirrorDir := path.Join(CertsDir, hostDir(m.Host))
	var ca string
	if len(m.CA) > 0 {
		ca = path.Join(mirrorDir, "ca.crt")
		out[ca] = "# written by gpukit: the registry mirror's CA (spec.mirrors.registryCAFile)\n" + strings.TrimRight(string(m.CA), "\n") + "\n"
	}
	// host is one [host] table: the keys first, the header subtable last.
	host := func(url string, keys ...string) string {
		h := fmt.Sprintf("[host.%q]\n  capabilities = [\"pull\", \"resolve\"]\n", url)
		for _, k := range keys {
			h += "  " + k + "\n"
		}
		if ca != "" {
			h += fmt.Sprintf("  ca = %q\n", ca)
		}
		if m.Authorization != "" {
			h += fmt.Sprintf("  [host.%q.header]\n    authorization = %q\n", url, m.Authorization)
		}
		return h
	}
	for _, r := range MirroredRegistries {
		upstream := "https://" + r
		if r == "docker.io" {
			upstream = "https://registry-1.docker.io"
		}
		// override_path: the mirror's path is the API root for this
		// registry's repositories (<mirror>/v2/<path>/<registry>/...).
		url := m.Scheme + "://" + path.Join(m.Host, "v2", m.Path, r)
		out[path.Join(CertsDir, r, "hosts.toml")] = fmt.Sprintf("# written by gpukit: %s's images come from the mirror (spec.mirrors.registry)\nserver = %q\n\n%s",
			r, upstream, host(url, "override_path = true"))
	}
	out[path.Join(mirrorDir, "hosts.toml")] = fmt.Sprintf("# written by gpukit: the registry mirror (spec.mirrors.registry)\nserver = %q\n\n%s",
		m.Scheme+"://"+m.Host, host(m.Scheme+"://"+m.Host))
	return out
}

// hostDir is containerd's directory name for a registry host: host:port as
// it is, an IPv6 address in brackets.
func hostDir(hostPort string) string {
	if h, p, err := net.SplitHostPort(hostPort); err == nil && strings.Contains(h, ":") {
		return "[" + h + "]:" + p
	}
	return hostPort
}
