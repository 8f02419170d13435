// Command nvidia-container-runtime is the lab's gpukit GPU SIMULATOR stand-in
// for the NVIDIA Container Runtime. Test tooling only, never shipped; the
// stand-in nvidia-container-toolkit-base package installs it as
// /usr/bin/nvidia-container-runtime.
//
// Like NVIDIA's, it is an OCI runtime shim: docker, configured with
// runtimes.nvidia.path = nvidia-container-runtime (and default-runtime
// nvidia), runs it with runc's command line
//
//	nvidia-container-runtime [--root X --log Y --log-format json --systemd-cgroup ...] SUBCOMMAND [ARGS]
//
// and, for every invocation, it finally execs runc (found in PATH; a clear
// error when there is none) with exactly the same arguments, so signals and
// the exit status are runc's.
//
// Only for the create (and run) subcommand it first edits the bundle's
// config.json (bundle from --bundle B, --bundle=B, -b B, -b=B; the current
// directory by default). The devices the container gets mirror the real
// toolkit's rule (nvidia-container-runtime-hook, hook_config.go
// swarm-resource, which takes precedence over NVIDIA_VISIBLE_DEVICES):
//
//   - the top-level key swarm-resource of /etc/nvidia-container-runtime/config.toml
//     (a TOML string, a comma-separated list of environment variable names such as
//     "DOCKER_RESOURCE_NVIDIA-GPU"; commented out = unset) names the variables
//     Docker Swarm sets for a service with --generic-resource
//     (DOCKER_RESOURCE_NVIDIA-GPU=GPU-uuid1,GPU-uuid2): the value of the first of
//     them present in the spec's process.env is the devices;
//   - else the value of NVIDIA_VISIBLE_DEVICES in process.env;
//   - else none.
//
// Devices other than "", "void" and "none" are written to process.env as
// NVIDIA_VISIBLE_DEVICES=<devices> (replacing any earlier one), with
// GPUSIM_RUNTIME=gpukit GPU SIMULATOR stand-in so that a test can see the
// stand-in ran; every other field of config.json is kept, and so is its
// mode. Without devices config.json is left as it is. No GPU is handed to
// the container: there is none in the lab.
//
//	nvidia-container-runtime --version | -v
//
// prints "NVIDIA Container Runtime version X (gpukit GPU SIMULATOR stand-in)",
// X from /usr/share/gpusim/nvidia-container-toolkit.version, then execs
// runc --version like the real one.
//
// GPUSIM_ROOT prefixes the configuration and version files (tests).
// Errors go to stderr, exit status 1.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

const (
	label      = "gpukit GPU SIMULATOR stand-in"
	configTOML = "/etc/nvidia-container-runtime/config.toml"
	visible    = "NVIDIA_VISIBLE_DEVICES"
	marker     = "GPUSIM_RUNTIME"
)

func main() {
	dir, err := os.Getwd()
	if err != nil {
		dir = "."
	}
	os.Exit(run(os.Getenv("GPUSIM_ROOT"), dir, os.Args[1:], os.Stdout, os.Stderr, execRunc))
}

// execRunc replaces this process with runc, found in PATH.
func execRunc(argv []string) error {
	path, err := findRunc(os.Getenv("PATH"))
	if err != nil {
		return err
	}
	return syscall.Exec(path, argv, os.Environ())
}

// findRunc looks runc up in a PATH value.
func findRunc(pathList string) (string, error) {
	for _, d := range filepath.SplitList(pathList) {
		if d == "" {
			d = "."
		}
		p := filepath.Join(d, "runc")
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("runc not found in PATH (%s): the nvidia runtime runs every container with runc", pathList)
}

// run does what the runtime does before runc takes over, then calls exec
// with runc's argv (exec does not return when it succeeds). dir is the
// directory a relative bundle is taken from.
func run(root, dir string, args []string, stdout, stderr io.Writer, exec func(argv []string) error) int {
	fail := func(err error) int {
		fmt.Fprintf(stderr, "nvidia-container-runtime (%s): %v\n", label, err)
		return 1
	}
	if len(args) > 0 && (args[0] == "--version" || args[0] == "-v") {
		v, err := os.ReadFile(filepath.Join(root, "/usr/share/gpusim/nvidia-container-toolkit.version"))
		if err != nil {
			return fail(err)
		}
		first, _, _ := strings.Cut(string(v), "\n")
		fmt.Fprintf(stdout, "NVIDIA Container Runtime version %s (%s)\n\n", strings.TrimSpace(first), label)
	} else if sub, rest := subcommand(args); sub == "create" || sub == "run" {
		bundle, err := bundleDir(rest)
		if err != nil {
			return fail(err)
		}
		if bundle == "" {
			bundle = "."
		}
		if !filepath.IsAbs(bundle) {
			bundle = filepath.Join(dir, bundle)
		}
		if err := modifySpec(filepath.Join(root, configTOML), filepath.Join(bundle, "config.json")); err != nil {
			return fail(err)
		}
	}
	if err := exec(append([]string{"runc"}, args...)); err != nil {
		return fail(err)
	}
	return 0
}

// runc's global flags that take a value; the others (--debug,
// --systemd-cgroup, --help) take none.
var globalValueFlags = map[string]bool{"root": true, "log": true, "log-format": true, "criu": true, "rootless": true}

// create's and run's flags that take a value, besides the bundle.
var subValueFlags = map[string]bool{"console-socket": true, "pid-file": true, "preserve-fds": true}

// subcommand skips runc's global flags: the subcommand and its arguments.
func subcommand(args []string) (string, []string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			if i+1 < len(args) {
				return args[i+1], args[i+2:]
			}
			return "", nil
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			return a, args[i+1:]
		}
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if globalValueFlags[name] && !hasValue {
			i++
		}
	}
	return "", nil
}

// bundleDir is the subcommand's --bundle / -b ("" without one).
func bundleDir(args []string) (string, error) {
	bundle := ""
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			break
		}
		if !strings.HasPrefix(a, "-") {
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		switch {
		case name == "b" || name == "bundle":
			if !hasValue {
				if i+1 >= len(args) {
					return "", fmt.Errorf("flag needs an argument: %s", a)
				}
				i++
				value = args[i]
			}
			bundle = value
		case subValueFlags[name] && !hasValue:
			i++
		}
	}
	return bundle, nil
}

// modifySpec writes the container's devices into the bundle's config.json.
func modifySpec(tomlPath, specPath string) error {
	names, err := swarmResource(tomlPath)
	if err != nil {
		return err
	}
	b, err := os.ReadFile(specPath)
	if err != nil {
		return fmt.Errorf("reading the OCI spec: %w", err)
	}
	var spec map[string]json.RawMessage
	if err := json.Unmarshal(b, &spec); err != nil {
		return fmt.Errorf("reading the OCI spec %s: %w", specPath, err)
	}
	var process map[string]json.RawMessage
	if raw, ok := spec["process"]; ok && !isNull(raw) {
		if err := json.Unmarshal(raw, &process); err != nil {
			return fmt.Errorf("reading the OCI spec %s: process: %w", specPath, err)
		}
	}
	var env []string
	if raw, ok := process["env"]; ok && !isNull(raw) {
		if err := json.Unmarshal(raw, &env); err != nil {
			return fmt.Errorf("reading the OCI spec %s: process.env: %w", specPath, err)
		}
	}
	devs := devices(env, names)
	if devs == "" || devs == "void" || devs == "none" {
		return nil
	}
	kept := make([]string, 0, len(env)+2)
	for _, e := range env {
		if k, _, _ := strings.Cut(e, "="); k != visible && k != marker {
			kept = append(kept, e)
		}
	}
	kept = append(kept, visible+"="+devs, marker+"="+label)
	if process["env"], err = marshal(kept); err != nil {
		return err
	}
	if spec["process"], err = marshal(process); err != nil {
		return err
	}
	out, err := marshal(spec)
	if err != nil {
		return err
	}
	return writeFile(specPath, out)
}

// marshal is json.Marshal without escaping <, > and &: the strings stay as
// they were written.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

// devices are the container's devices: the first swarm resource variable
// present in env, else NVIDIA_VISIBLE_DEVICES, else none.
func devices(env, swarmNames []string) string {
	lookup := func(name string) (string, bool) {
		for i := len(env) - 1; i >= 0; i-- { // the last one wins, as in a map
			if k, v, ok := strings.Cut(env[i], "="); ok && k == name {
				return v, true
			}
		}
		return "", false
	}
	for _, n := range swarmNames {
		if v, ok := lookup(n); ok {
			return strings.TrimSpace(v)
		}
	}
	v, _ := lookup(visible)
	return strings.TrimSpace(v)
}

// swarmResource reads the top-level swarm-resource of config.toml: the
// names it lists, none when it is unset or the file is missing.
func swarmResource(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	value, err := topLevelString(string(b), "swarm-resource")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var names []string
	for _, n := range strings.Split(value, ",") {
		if n = strings.TrimSpace(n); n != "" {
			names = append(names, n)
		}
	}
	return names, nil
}

// topLevelString finds a top-level key's TOML string value ("" when the key
// is absent): the lines before the first [table] header, one key = value
// per line, the value a basic or literal one-line string.
func topLevelString(doc, key string) (string, error) {
	for n, line := range strings.Split(doc, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		if line[0] == '[' {
			break
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		k = strings.TrimSpace(k)
		if len(k) >= 2 && (k[0] == '"' || k[0] == '\'') && k[len(k)-1] == k[0] {
			k = k[1 : len(k)-1]
		}
		if k != key {
			continue
		}
		s, err := tomlString(strings.TrimSpace(v))
		if err != nil {
			return "", fmt.Errorf("line %d: %s: %w", n+1, key, err)
		}
		return s, nil
	}
	return "", nil
}

// tomlString decodes a one-line TOML string, a comment may follow.
func tomlString(v string) (string, error) {
	if strings.HasPrefix(v, `"""`) || strings.HasPrefix(v, `'''`) {
		return "", errors.New("multi-line strings are not simulated")
	}
	var s, rest string
	switch {
	case strings.HasPrefix(v, "'"):
		end := strings.IndexByte(v[1:], '\'')
		if end < 0 {
			return "", errors.New("unterminated string")
		}
		s, rest = v[1:1+end], v[2+end:]
	case strings.HasPrefix(v, `"`):
		end := -1
		for i := 1; i < len(v); i++ {
			if v[i] == '\\' {
				i++
			} else if v[i] == '"' {
				end = i
				break
			}
		}
		if end < 0 {
			return "", errors.New("unterminated string")
		}
		var err error
		if s, err = strconv.Unquote(v[:end+1]); err != nil {
			return "", fmt.Errorf("bad string %s", v[:end+1])
		}
		rest = v[end+1:]
	default:
		return "", fmt.Errorf("%q is not a string", v)
	}
	if rest = strings.TrimSpace(rest); rest != "" && rest[0] != '#' {
		return "", fmt.Errorf("unexpected %q after the string", rest)
	}
	return s, nil
}

// writeFile replaces path, keeping its mode.
func writeFile(path string, data []byte) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	tmp := path + ".nvidia-container-runtime.tmp"
	if err := os.WriteFile(tmp, data, st.Mode().Perm()); err != nil {
		return err
	}
	if err := os.Chmod(tmp, st.Mode().Perm()); err != nil { // not the umask's
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}
