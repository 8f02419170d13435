package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// NVIDIA's default config.toml begins like this (the shipped stand-in too).
const defaultTOML = `#accept-nvidia-visible-devices-as-volume-mounts = false
#accept-nvidia-visible-devices-envvar-when-unprivileged = true
disable-require = false
supported-driver-capabilities = "compat32,compute,display,graphics,ngx,utility,video"
#swarm-resource = "DOCKER_RESOURCE_GPU"

[nvidia-container-runtime]
mode = "auto"
`

// swarmTOML sets swarm-resource (with a comment after it) to names.
func swarmTOML(names string) string {
	return strings.Replace(defaultTOML, `#swarm-resource = "DOCKER_RESOURCE_GPU"`, `swarm-resource = "`+names+`" # docker swarm`, 1)
}

// spec is a config.json as docker writes it, with fields the stand-in must keep.
func spec(env ...string) string {
	e, _ := json.Marshal(env)
	return `{"ociVersion":"1.2.0","process":{"terminal":false,"user":{"uid":0,"gid":0},"args":["nvidia-smi","-L"],"env":` + string(e) +
		`,"cwd":"/","capabilities":{"bounding":["CAP_CHOWN"]},"x-unknown":{"n":12345678901234567890}},` +
		`"root":{"path":"/var/lib/docker/overlay2/abc/merged"},"hostname":"c1","mounts":[{"destination":"/proc","type":"proc","source":"proc"}],` +
		`"hooks":{"prestart":[{"path":"/usr/bin/true","args":["a<b>&c"]}]},"linux":{"namespaces":[{"type":"pid"}],"maskedPaths":["/proc/kcore"]},` +
		`"annotations":{"com.example":"x"},"x-vendor":[1.50000000000000001,null]}`
}

const swarmGPUs = "DOCKER_RESOURCE_NVIDIA-GPU=GPU-0c3d2b7a-1111-2222-3333-444455556666,GPU-9f8e7d6c-aaaa-bbbb-cccc-ddddeeeeffff"

func TestCreateSetsTheDevices(t *testing.T) {
	t.Parallel()
	const uuids = "GPU-0c3d2b7a-1111-2222-3333-444455556666,GPU-9f8e7d6c-aaaa-bbbb-cccc-ddddeeeeffff"
	global := []string{"--root", "/var/run/docker/runtime-runc/moby", "--log", "/run/containerd/log.json", "--log-format", "json", "--systemd-cgroup"}
	create := func(bundleArgs ...string) func(string) []string {
		return func(bundle string) []string {
			a := append(slices.Clone(global), "create")
			for _, b := range bundleArgs {
				a = append(a, strings.ReplaceAll(b, "BUNDLE", bundle))
			}
			return append(a, "--pid-file", "/run/c1.pid", "--console-socket", "/tmp/console.sock", "c1")
		}
	}
	withBundle := create("--bundle", "BUNDLE")
	for _, tc := range []struct {
		name string
		toml string // "" writes no config.toml
		args func(bundle string) []string
		cwd  bool // the bundle is the directory run is in (relative bundles)
		env  []string
		want []string // process.env after; nil: config.json untouched
	}{
		{name: "swarm resource", toml: swarmTOML("DOCKER_RESOURCE_NVIDIA-GPU"), args: withBundle,
			env:  []string{"PATH=/usr/bin", swarmGPUs, "NVIDIA_VISIBLE_DEVICES=all", "NVIDIA_DRIVER_CAPABILITIES=compute,utility"},
			want: []string{"PATH=/usr/bin", swarmGPUs, "NVIDIA_DRIVER_CAPABILITIES=compute,utility", "NVIDIA_VISIBLE_DEVICES=" + uuids, "GPUSIM_RUNTIME=" + label}},
		{name: "swarm resource commented out", toml: defaultTOML, args: withBundle,
			env:  []string{swarmGPUs, "NVIDIA_VISIBLE_DEVICES=GPU-1", "HOME=/root"},
			want: []string{swarmGPUs, "HOME=/root", "NVIDIA_VISIBLE_DEVICES=GPU-1", "GPUSIM_RUNTIME=" + label}},
		{name: "commented out, no NVIDIA_VISIBLE_DEVICES", toml: defaultTOML, args: withBundle,
			env: []string{swarmGPUs, "HOME=/root"}},
		{name: "no config.toml", args: withBundle,
			env:  []string{swarmGPUs, "NVIDIA_VISIBLE_DEVICES=0,1"},
			want: []string{swarmGPUs, "NVIDIA_VISIBLE_DEVICES=0,1", "GPUSIM_RUNTIME=" + label}},
		{name: "a list of names, the first present wins", toml: swarmTOML("DOCKER_RESOURCE_GPU, DOCKER_RESOURCE_NVIDIA-GPU,DOCKER_RESOURCE_OTHER"), args: withBundle,
			env:  []string{"DOCKER_RESOURCE_OTHER=GPU-other", swarmGPUs},
			want: []string{"DOCKER_RESOURCE_OTHER=GPU-other", swarmGPUs, "NVIDIA_VISIBLE_DEVICES=" + uuids, "GPUSIM_RUNTIME=" + label}},
		{name: "a list of names, none present", toml: swarmTOML("DOCKER_RESOURCE_GPU,DOCKER_RESOURCE_FPGA"), args: withBundle,
			env:  []string{swarmGPUs, "NVIDIA_VISIBLE_DEVICES=all"},
			want: []string{swarmGPUs, "NVIDIA_VISIBLE_DEVICES=all", "GPUSIM_RUNTIME=" + label}},
		{name: "void", toml: defaultTOML, args: withBundle, env: []string{"NVIDIA_VISIBLE_DEVICES=void"}},
		{name: "none", toml: defaultTOML, args: withBundle, env: []string{"NVIDIA_VISIBLE_DEVICES=none"}},
		{name: "no env", toml: defaultTOML, args: withBundle},
		{name: "a second run replaces its own", toml: defaultTOML, args: withBundle,
			env:  []string{"NVIDIA_VISIBLE_DEVICES=GPU-1", "GPUSIM_RUNTIME=old", "A=b"},
			want: []string{"A=b", "NVIDIA_VISIBLE_DEVICES=GPU-1", "GPUSIM_RUNTIME=" + label}},
		{name: "--bundle=", toml: swarmTOML("DOCKER_RESOURCE_NVIDIA-GPU"), args: create("--bundle=BUNDLE"),
			env: []string{swarmGPUs}, want: []string{swarmGPUs, "NVIDIA_VISIBLE_DEVICES=" + uuids, "GPUSIM_RUNTIME=" + label}},
		{name: "-b", toml: swarmTOML("DOCKER_RESOURCE_NVIDIA-GPU"), args: create("-b", "BUNDLE"),
			env: []string{swarmGPUs}, want: []string{swarmGPUs, "NVIDIA_VISIBLE_DEVICES=" + uuids, "GPUSIM_RUNTIME=" + label}},
		{name: "relative -b", toml: swarmTOML("DOCKER_RESOURCE_NVIDIA-GPU"), args: func(string) []string { return create("-b", ".")("") }, cwd: true,
			env: []string{swarmGPUs}, want: []string{swarmGPUs, "NVIDIA_VISIBLE_DEVICES=" + uuids, "GPUSIM_RUNTIME=" + label}},
		{name: "bundle from the current directory", toml: swarmTOML("DOCKER_RESOURCE_NVIDIA-GPU"), args: create(), cwd: true,
			env: []string{swarmGPUs}, want: []string{swarmGPUs, "NVIDIA_VISIBLE_DEVICES=" + uuids, "GPUSIM_RUNTIME=" + label}},
		{name: "run", toml: defaultTOML, args: func(b string) []string { return []string{"run", "-d", "--bundle", b, "c1"} },
			env: []string{"NVIDIA_VISIBLE_DEVICES=all"}, want: []string{"NVIDIA_VISIBLE_DEVICES=all", "GPUSIM_RUNTIME=" + label}},
		{name: "a bundle named create", toml: defaultTOML, args: func(b string) []string { return []string{"--root", "create", "delete", "--force", "c1"} },
			env: []string{"NVIDIA_VISIBLE_DEVICES=all"}},
		{name: "start", toml: defaultTOML, args: func(string) []string { return append(slices.Clone(global), "start", "c1") }, cwd: true,
			env: []string{"NVIDIA_VISIBLE_DEVICES=all"}},
		{name: "state", toml: defaultTOML, args: func(string) []string { return append(slices.Clone(global), "state", "c1") }, cwd: true,
			env: []string{"NVIDIA_VISIBLE_DEVICES=all"}},
		{name: "delete", toml: defaultTOML, args: func(b string) []string { return append(slices.Clone(global), "delete", "--force", "c1") }, cwd: true,
			env: []string{"NVIDIA_VISIBLE_DEVICES=all"}},
		{name: "kill", toml: defaultTOML, args: func(b string) []string { return append(slices.Clone(global), "kill", "c1", "9") }, cwd: true,
			env: []string{"NVIDIA_VISIBLE_DEVICES=all"}},
		{name: "features", toml: defaultTOML, args: func(string) []string { return []string{"features"} }, cwd: true,
			env: []string{"NVIDIA_VISIBLE_DEVICES=all"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			root, bundle := t.TempDir(), t.TempDir()
			if tc.toml != "" {
				writeTo(t, filepath.Join(root, configTOML), tc.toml, 0o644)
			}
			before := spec(tc.env...)
			if tc.env == nil {
				before = `{"ociVersion":"1.2.0","process":{"args":["sh"],"cwd":"/"},"root":{"path":"rootfs"}}`
			}
			specPath := filepath.Join(bundle, "config.json")
			writeTo(t, specPath, before, 0o600)
			dir := t.TempDir()
			if tc.cwd {
				dir = bundle
			}
			args := tc.args(bundle)
			var got []string
			var out, errb bytes.Buffer
			code := run(root, dir, slices.Clone(args), &out, &errb, func(argv []string) error { got = argv; return nil })
			if code != 0 || errb.Len() > 0 || out.Len() > 0 {
				t.Fatalf("exit %d: %s%s", code, out.String(), errb.String())
			}
			if want := append([]string{"runc"}, args...); !reflect.DeepEqual(got, want) {
				t.Errorf("exec'd %q, want %q", got, want)
			}
			after, _ := os.ReadFile(specPath)
			if st, _ := os.Stat(specPath); st.Mode().Perm() != 0o600 {
				t.Errorf("config.json's mode %v, want 0600 kept", st.Mode())
			}
			if tc.want == nil {
				if string(after) != before {
					t.Errorf("config.json changed:\n%s", after)
				}
				return
			}
			if !strings.Contains(string(after), `"args":["a<b>&c"]`) || !strings.Contains(string(after), `12345678901234567890`) {
				t.Errorf("strings or numbers rewritten:\n%s", after)
			}
			var b, a map[string]any
			if err := json.Unmarshal([]byte(before), &b); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(after, &a); err != nil {
				t.Fatalf("config.json: %v\n%s", err, after)
			}
			env := a["process"].(map[string]any)["env"]
			if gotEnv := strings.Join(toStrings(env), "\n"); gotEnv != strings.Join(tc.want, "\n") {
				t.Errorf("process.env:\n%s\nwant:\n%s", gotEnv, strings.Join(tc.want, "\n"))
			}
			delete(a["process"].(map[string]any), "env")
			delete(b["process"].(map[string]any), "env")
			if !reflect.DeepEqual(a, b) {
				t.Errorf("other fields changed:\n%s\nwas:\n%s", after, before)
			}
		})
	}
}

func TestErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, toml, spec string
		args             []string
		want             string
	}{
		{name: "no config.json", toml: defaultTOML, args: []string{"create", "--bundle", "BUNDLE/missing", "c1"}, want: "reading the OCI spec"},
		{name: "bad config.json", toml: defaultTOML, spec: `{"process": [`, args: []string{"create", "-b", "BUNDLE", "c1"}, want: "reading the OCI spec"},
		{name: "-b without a value", toml: defaultTOML, spec: spec(), args: []string{"create", "c1", "-b"}, want: "flag needs an argument: -b"},
		{name: "swarm-resource not a string", toml: "swarm-resource = 3\n", spec: spec(), args: []string{"create", "-b", "BUNDLE", "c1"}, want: "line 1: swarm-resource"},
		{name: "runc missing", toml: defaultTOML, spec: spec(), args: []string{"start", "c1"}, want: "runc not found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			root, bundle := t.TempDir(), t.TempDir()
			writeTo(t, filepath.Join(root, configTOML), tc.toml, 0o644)
			if tc.spec != "" {
				writeTo(t, filepath.Join(bundle, "config.json"), tc.spec, 0o644)
			}
			args := slices.Clone(tc.args)
			for i := range args {
				args[i] = strings.ReplaceAll(args[i], "BUNDLE", bundle)
			}
			execd := false
			var errb bytes.Buffer
			code := run(root, bundle, args, &bytes.Buffer{}, &errb, func([]string) error {
				execd = true
				_, err := findRunc(t.TempDir())
				return err
			})
			if code != 1 || !strings.Contains(errb.String(), tc.want) || !strings.Contains(errb.String(), label) {
				t.Errorf("exit %d: %q, want 1 and %q", code, errb.String(), tc.want)
			}
			if execd != (tc.want == "runc not found") {
				t.Errorf("runc exec'd: %v", execd)
			}
		})
	}
}

func TestVersion(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	writeTo(t, filepath.Join(root, "usr/share/gpusim/nvidia-container-toolkit.version"), "1.20.0\n# the version of this stand-in\n", 0o644)
	for _, flag := range []string{"--version", "-v"} {
		var out, errb bytes.Buffer
		var got []string
		code := run(root, root, []string{flag}, &out, &errb, func(argv []string) error { got = argv; return nil })
		if code != 0 || out.String() != "NVIDIA Container Runtime version 1.20.0 (gpukit GPU SIMULATOR stand-in)\n\n" {
			t.Errorf("%s: exit %d: %q %q", flag, code, out.String(), errb.String())
		}
		if !reflect.DeepEqual(got, []string{"runc", flag}) {
			t.Errorf("%s: exec'd %q", flag, got)
		}
	}
}

func TestFindRunc(t *testing.T) {
	t.Parallel()
	empty, bin, notExec := t.TempDir(), t.TempDir(), t.TempDir()
	writeTo(t, filepath.Join(bin, "runc"), "#!/bin/sh\n", 0o755)
	writeTo(t, filepath.Join(notExec, "runc"), "#!/bin/sh\n", 0o644)
	os.Mkdir(filepath.Join(empty, "runc"), 0o755) // a directory is no runc
	p, err := findRunc(strings.Join([]string{empty, notExec, bin}, string(os.PathListSeparator)))
	if err != nil || p != filepath.Join(bin, "runc") {
		t.Errorf("findRunc: %q, %v", p, err)
	}
	if _, err := findRunc(empty + string(os.PathListSeparator) + notExec); err == nil || !strings.Contains(err.Error(), "runc not found in PATH") {
		t.Errorf("no runc: %v", err)
	}
}

func TestTopLevelString(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ doc, want, err string }{
		{doc: defaultTOML, want: ""},
		{doc: `swarm-resource = "DOCKER_RESOURCE_GPU"`, want: "DOCKER_RESOURCE_GPU"},
		{doc: "  \"swarm-resource\"=  'DOCKER_RESOURCE_A,B'  # literal\n", want: "DOCKER_RESOURCE_A,B"},
		{doc: `swarm-resource = "a\"b\\c\u0041"`, want: `a"b\cA`},
		{doc: "[nvidia-container-cli]\nswarm-resource = \"IN_A_TABLE\"\n", want: ""},
		{doc: "swarm-resource-x = \"no\"\nswarm-resource = \"yes\"\n[t]\n", want: "yes"},
		{doc: `swarm-resource = DOCKER`, err: "is not a string"},
		{doc: `swarm-resource = "open`, err: "unterminated"},
		{doc: `swarm-resource = "a" b`, err: "after the string"},
		{doc: `swarm-resource = """a"""`, err: "multi-line"},
	} {
		got, err := topLevelString(tc.doc, "swarm-resource")
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: %q, %v, want an error %q", tc.doc, got, err, tc.err)
			}
		} else if err != nil || got != tc.want {
			t.Errorf("%q: %q, %v, want %q", tc.doc, got, err, tc.want)
		}
	}
}

func toStrings(v any) []string {
	var out []string
	for _, s := range v.([]any) {
		out = append(out, s.(string))
	}
	return out
}

func writeTo(t *testing.T, path, data string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}
