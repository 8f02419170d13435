// Command nvidia-ctk is the lab's GPU SIMULATOR stand-in for the NVIDIA
// Container Toolkit's CLI. Test tooling only, never shipped; the stand-in
// nvidia-container-toolkit-base package installs it.
//
// It does what gpukit's scripts call, like the real one:
//
//	nvidia-ctk --version
//	nvidia-ctk runtime configure --runtime=docker [--set-as-default] [--config=FILE]
//	    merges the nvidia runtime into /etc/docker/daemon.json, keeping the other settings
//	nvidia-ctk runtime configure --runtime=containerd [--set-as-default] [--config=FILE] [--drop-in-config=FILE]
//	    writes the nvidia runtime to the drop-in /etc/containerd/conf.d/99-nvidia.toml and
//	    makes config.toml import it, keeping the other settings
//
// Anything else fails, saying it is not simulated.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
)

const label = "gpukit GPU SIMULATOR stand-in"

func main() {
	os.Exit(run(os.Getenv("GPUSIM_ROOT"), os.Args[1:], os.Stdout, os.Stderr))
}

func run(root string, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "--help" || args[0] == "-h" {
		fmt.Fprintf(stdout, "NVIDIA Container Toolkit CLI (%s)\n\nusage: nvidia-ctk runtime configure --runtime=docker|containerd [--set-as-default]\n", label)
		return 0
	}
	if args[0] == "--version" || args[0] == "-v" || args[0] == "version" {
		v, err := os.ReadFile(filepath.Join(root, "/usr/share/gpusim/nvidia-container-toolkit.version"))
		if err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
		first, _, _ := strings.Cut(string(v), "\n")
		fmt.Fprintf(stdout, "NVIDIA Container Toolkit CLI version %s\ncommit: %s\n", strings.TrimSpace(first), strings.ReplaceAll(label, " ", "-"))
		return 0
	}
	if len(args) < 2 || args[0] != "runtime" || args[1] != "configure" {
		fmt.Fprintf(stderr, "nvidia-ctk (%s): %q is not simulated\n", label, strings.Join(args, " "))
		return 1
	}
	fs := flag.NewFlagSet("nvidia-ctk runtime configure", flag.ContinueOnError)
	fs.SetOutput(stderr)
	runtime := fs.String("runtime", "docker", "docker or containerd")
	setDefault := fs.Bool("set-as-default", false, "make nvidia the default runtime")
	config := fs.String("config", "", "the runtime's configuration file")
	dropIn := fs.String("drop-in-config", "", "containerd: the drop-in file")
	dryRun := fs.Bool("dry-run", false, "print the configuration instead of writing it")
	nvidiaName := fs.String("nvidia-runtime-name", "nvidia", "the runtime's name")
	if err := fs.Parse(args[2:]); err != nil {
		return 1
	}
	var err error
	switch *runtime {
	case "docker":
		if *config == "" {
			*config = "/etc/docker/daemon.json"
		}
		err = configureDocker(filepath.Join(root, *config), *nvidiaName, *setDefault, *dryRun, stdout, stderr)
	case "containerd":
		if *config == "" {
			*config = "/etc/containerd/config.toml"
		}
		if *dropIn == "" {
			*dropIn = "/etc/containerd/conf.d/99-nvidia.toml"
		}
		err = configureContainerd(root, *config, *dropIn, *nvidiaName, *setDefault, *dryRun, stdout, stderr)
	default:
		err = fmt.Errorf("unrecognized runtime '%s' (%s: docker and containerd are simulated)", *runtime, label)
	}
	if err != nil {
		fmt.Fprintf(stderr, "ERRO[0000] %v\n", err)
		return 1
	}
	return 0
}

func configureDocker(path, name string, setDefault, dryRun bool, stdout, stderr io.Writer) error {
	cfg := map[string]any{}
	fmt.Fprintf(stderr, "INFO[0000] Loading config from %s\n", path)
	if b, err := os.ReadFile(path); err == nil && len(bytes.TrimSpace(b)) > 0 {
		d := json.NewDecoder(bytes.NewReader(b))
		d.UseNumber() // numbers stay as the user wrote them
		if err := d.Decode(&cfg); err != nil {
			return fmt.Errorf("unable to load config: %w", err)
		}
	} else if err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("unable to load config: %w", err)
	}
	runtimes, _ := cfg["runtimes"].(map[string]any)
	if runtimes == nil {
		runtimes = map[string]any{}
	}
	runtimes[name] = map[string]any{"args": []any{}, "path": "nvidia-container-runtime"}
	cfg["runtimes"] = runtimes
	if setDefault {
		cfg["default-runtime"] = name
	}
	out, err := json.MarshalIndent(cfg, "", "    ")
	if err != nil {
		return err
	}
	out = append(out, '\n')
	if dryRun {
		_, err := stdout.Write(out)
		return err
	}
	if err := writeFile(path, out); err != nil {
		return fmt.Errorf("unable to flush config: %w", err)
	}
	fmt.Fprintf(stderr, "INFO[0000] Wrote updated config to %s\nINFO[0000] It is recommended that docker daemon be restarted.\n", path)
	return nil
}

var versionLine = regexp.MustCompile(`(?m)^\s*version\s*=\s*([0-9]+)`)

func configureContainerd(root, config, dropIn, name string, setDefault, dryRun bool, stdout, stderr io.Writer) error {
	path := filepath.Join(root, config)
	fmt.Fprintf(stderr, "INFO[0000] Loading config from %s\n", path)
	top, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("unable to load config: %w", err)
	}
	version := "2"
	if m := versionLine.FindSubmatch(top); m != nil {
		version = string(m[1])
	} else if out, err := exec.Command("containerd", "--version").Output(); err == nil && regexp.MustCompile(` v?2\.`).Match(out) {
		version = "3" // containerd 2.x
	}
	plugin := `plugins."io.containerd.grpc.v1.cri".containerd`
	if version == "3" {
		plugin = `plugins."io.containerd.cri.v1.runtime".containerd`
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# Written by nvidia-ctk (%s)\nversion = %s\n\n", label, version)
	fmt.Fprintf(&b, "[%s]\n", plugin)
	if setDefault {
		fmt.Fprintf(&b, "  default_runtime_name = %q\n", name)
	}
	fmt.Fprintf(&b, "\n  [%s.runtimes.%s]\n    privileged_without_host_devices = false\n    runtime_engine = \"\"\n    runtime_root = \"\"\n    runtime_type = \"io.containerd.runc.v2\"\n", plugin, name)
	fmt.Fprintf(&b, "\n    [%s.runtimes.%s.options]\n      BinaryName = \"/usr/bin/nvidia-container-runtime\"\n", plugin, name)
	if dryRun {
		_, err := io.WriteString(stdout, b.String())
		return err
	}
	if err := writeFile(filepath.Join(root, dropIn), []byte(b.String())); err != nil {
		return fmt.Errorf("unable to flush config: %w", err)
	}
	fmt.Fprintf(stderr, "INFO[0000] Wrote updated config to %s\n", filepath.Join(root, dropIn))
	// config.toml must import the drop-in directory; everything else in it stays
	glob := filepath.Join(filepath.Dir(dropIn), "*.toml")
	newTop, changed := withImport(string(top), glob, version)
	if changed {
		if err := writeFile(path, []byte(newTop)); err != nil {
			return fmt.Errorf("unable to flush config: %w", err)
		}
		fmt.Fprintf(stderr, "INFO[0000] Wrote updated config to %s\n", path)
	}
	fmt.Fprintf(stderr, "INFO[0000] It is recommended that containerd daemon be restarted.\n")
	return nil
}

var importsLine = regexp.MustCompile(`(?m)^(\s*imports\s*=\s*\[)([^\]]*)\]`)

// withImport adds glob to config.toml's top-level imports.
func withImport(top, glob, version string) (string, bool) {
	if m := importsLine.FindStringSubmatchIndex(top); m != nil {
		list := top[m[4]:m[5]]
		if strings.Contains(list, `"`+glob+`"`) {
			return top, false
		}
		sep := ""
		if strings.TrimSpace(list) != "" {
			sep = ", "
		}
		entry := strings.TrimRight(list, " ") + sep + `"` + glob + `"`
		return top[:m[4]] + entry + "]" + top[m[1]:], true
	}
	line := `imports = ["` + glob + `"]` + "\n"
	if m := versionLine.FindStringIndex(top); m != nil {
		end := m[1]
		if nl := strings.IndexByte(top[end:], '\n'); nl >= 0 {
			end += nl + 1
		} else {
			top += "\n"
			end = len(top)
		}
		return top[:end] + line + top[end:], true
	}
	// top-level keys come before the first table
	return "version = " + version + "\n" + line + top, true
}

func writeFile(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	mode := os.FileMode(0o644)
	if st, err := os.Stat(path); err == nil {
		mode = st.Mode().Perm()
	}
	tmp := path + ".nvidia-ctk.tmp"
	if err := os.WriteFile(tmp, data, mode); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
