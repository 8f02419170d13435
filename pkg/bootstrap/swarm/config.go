package swarm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"github.com/gpukit/gpukit/pkg/swarmapi"
)

// ResourceEnv is the variable Swarm sets in a task's container to the
// assigned resources of a kind: upper("DOCKER_RESOURCE_" + kind) (moby's
// genericresource.EnvFormat). The NVIDIA runtime's swarm-resource setting
// must name it, or it ignores Swarm's assignment and the container sees no
// GPU (or, with NVIDIA_VISIBLE_DEVICES=all in the image, every GPU).
func ResourceEnv(kind string) string { return "DOCKER_RESOURCE_" + strings.ToUpper(kind) }

// NVIDIARuntime is the runtime Docker runs every container with on a GPU
// host. Swarm services cannot ask for --gpus or --runtime, so it is the
// default runtime.
const NVIDIARuntime = "nvidia-container-runtime"

// DaemonConfig returns daemon.json with gpukit's settings merged into the
// current file (nil: none): on a GPU host (uuids not empty) the nvidia
// runtime as the default, and node-generic-resources advertising each GPU
// as NVIDIA-GPU=<uuid>; a plain-HTTP registry mirror (insecure: its
// host[:port], "" for none) among the insecure-registries, which Docker
// must be told to reach without TLS; every other key, and generic
// resources of other kinds, stay as the user wrote them. changed is false
// when the current file already means the same (formatting aside).
func DaemonConfig(current []byte, uuids []string, insecure string) (out []byte, changed bool, err error) {
	cfg := map[string]json.RawMessage{}
	if len(bytes.TrimSpace(current)) > 0 {
		if err := json.Unmarshal(current, &cfg); err != nil {
			return nil, false, fmt.Errorf("%s is not a JSON object (%v): fix or remove it", DaemonJSON, err)
		}
	}
	if insecure != "" {
		var registries []string
		if raw, ok := cfg["insecure-registries"]; ok {
			if err := json.Unmarshal(raw, &registries); err != nil {
				return nil, false, fmt.Errorf("%s: insecure-registries is not a list of strings: %v", DaemonJSON, err)
			}
		}
		if !slices.Contains(registries, insecure) {
			cfg["insecure-registries"] = mustJSON(append(registries, insecure))
		}
	}
	var resources []string
	if raw, ok := cfg["node-generic-resources"]; ok {
		if err := json.Unmarshal(raw, &resources); err != nil {
			return nil, false, fmt.Errorf("%s: node-generic-resources is not a list of strings: %v", DaemonJSON, err)
		}
	}
	kept := resources[:0:0]
	for _, r := range resources {
		if kind, _, _ := strings.Cut(r, "="); kind != swarmapi.GPUKind {
			kept = append(kept, r)
		}
	}
	for _, u := range uuids {
		kept = append(kept, swarmapi.GPUKind+"="+u)
	}
	if len(kept) > 0 {
		cfg["node-generic-resources"] = mustJSON(kept)
	} else {
		delete(cfg, "node-generic-resources")
	}
	if len(uuids) > 0 {
		runtimes := map[string]map[string]json.RawMessage{}
		if raw, ok := cfg["runtimes"]; ok {
			if err := json.Unmarshal(raw, &runtimes); err != nil {
				return nil, false, fmt.Errorf("%s: runtimes is not an object of runtimes: %v", DaemonJSON, err)
			}
		}
		nv := runtimes["nvidia"]
		if nv == nil {
			nv = map[string]json.RawMessage{"runtimeArgs": json.RawMessage("[]")}
		}
		// nvidia-ctk writes the absolute path: that is the same runtime.
		var path string
		if json.Unmarshal(nv["path"], &path) != nil || (path != NVIDIARuntime && !strings.HasSuffix(path, "/"+NVIDIARuntime)) {
			nv["path"] = mustJSON(NVIDIARuntime)
		}
		runtimes["nvidia"] = nv
		cfg["runtimes"] = mustJSON(runtimes)
		cfg["default-runtime"] = mustJSON("nvidia")
	}
	out, err = json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return nil, false, err
	}
	return out, !sameJSON(current, out), nil
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // strings, lists and maps of them always marshal
	}
	return b
}

// sameJSON reports whether a and b hold the same JSON value (an empty a is {}).
func sameJSON(a, b []byte) bool {
	var x, y any
	if len(bytes.TrimSpace(a)) == 0 {
		a = []byte("{}")
	}
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

// MirrorCAFile is where Docker finds the CA of the registry mirror at
// host[:port]: every *.crt of /etc/docker/certs.d/<host[:port]>/ is a CA
// it trusts for that registry. The name is gpukit's, so that reset removes
// only what gpukit wrote.
func MirrorCAFile(host string) string { return "/etc/docker/certs.d/" + host + "/gpukit-mirror-ca.crt" }

// swarmResourceLine matches the top-level swarm-resource key, commented out
// (as NVIDIA ships it: #swarm-resource = "DOCKER_RESOURCE_GPU") or not.
var swarmResourceLine = regexp.MustCompile(`^\s*#?\s*swarm-resource\s*=`)

// RuntimeTOML returns the NVIDIA container runtime's config.toml with its
// top-level swarm-resource set to the variable of kind (ResourceEnv), the
// rest of the file unchanged, and whether that changed it. The first
// swarm-resource line before any table is replaced (commented or not, so the
// setting sits where NVIDIA documents it); without one, the setting goes
// first. A missing file (nil) stays missing: the toolkit is not installed.
// out has no trailing newline.
func RuntimeTOML(current []byte, kind string) (out []byte, changed bool) {
	if current == nil {
		return nil, false
	}
	want := fmt.Sprintf("swarm-resource = %q", ResourceEnv(kind))
	// Trailing newlines are not compared: the host's writer adds one.
	current = bytes.TrimRight(current, "\n")
	lines := strings.Split(string(current), "\n")
	done := false
	for i, l := range lines {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "[") {
			break
		}
		if swarmResourceLine.MatchString(l) {
			lines[i], done = want, true
			break
		}
	}
	if !done {
		lines = append([]string{want}, lines...)
	}
	out = []byte(strings.Join(lines, "\n"))
	return out, !bytes.Equal(out, current)
}
