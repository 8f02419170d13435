package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/gpukit/gpukit/manifests"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/test/fixtures"
)

// run executes the command line in-process.
func run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Execute(context.Background(), args, Streams{In: strings.NewReader(""), Out: &out, Err: &errb})
	return code, out.String(), errb.String()
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func sharedFixture(t *testing.T, parts ...string) string { return fixtures.Dir(t, parts...) }

// isolate keeps a test from this machine's kubeconfig and ssh-agent.
func isolate(t *testing.T) {
	t.Helper()
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("KUBECONFIG", "")
	t.Setenv("SSH_AUTH_SOCK", "")
	homeKubeconfig(t, filepath.Join(home, ".kube", "config"))
}

// homeKubeconfig points client-go's ~/.kube/config, found once when the
// process starts, at path for the test.
func homeKubeconfig(t *testing.T, path string) {
	t.Helper()
	was := clientcmd.RecommendedHomeFile
	clientcmd.RecommendedHomeFile = path
	t.Cleanup(func() { clientcmd.RecommendedHomeFile = was })
}

func TestExitCodes(t *testing.T) {
	isolate(t)
	example := writeFile(t, "cluster.yaml", string(inventory.Example()))
	bad := writeFile(t, "bad.yaml", "apiVersion: gpukit.dev/v1alpha1\nkind: Cluster\nmetadata: {name: lab}\nspec:\n  hosts:\n  - name: cp-1\n    address: 10.0.0.1\n    roles: [control-plane]\n    colour: blue\n")
	// Loopback addresses: should a check ever let a run start, nothing
	// outside this machine is contacted.
	loopback := writeFile(t, "loopback.yaml", "apiVersion: gpukit.dev/v1alpha1\nkind: Cluster\nmetadata: {name: lab}\nspec:\n  ssh: {knownHostsFile: /dev/null}\n  hosts:\n  - name: cp-1\n    address: 127.0.0.2\n    roles: [control-plane]\n")
	needsSecret := writeFile(t, "secret.yaml", "apiVersion: gpukit.dev/v1alpha1\nkind: Cluster\nmetadata: {name: lab}\nspec:\n  ssh:\n    user: ops\n    password: {env: GPUKIT_TEST_UNSET_PASSWORD}\n  hosts:\n  - name: cp-1\n    address: 127.0.0.2\n    roles: [control-plane]\n")
	escapes := writeFile(t, "esc.yaml", "apiVersion: gpukit.dev/v1alpha1\nkind: Cluster\nmetadata: {name: \"lab\\e]0;owned\\a\"}\nspec:\n  hosts:\n  - name: \"cp\\ec\"\n    address: 10.0.0.1\n    roles: [control-plane]\n")
	key := writeFile(t, "id_ed25519", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjE=\n-----END OPENSSH PRIVATE KEY-----\n")
	keyAsPassword := writeFile(t, "keypw.yaml", "apiVersion: gpukit.dev/v1alpha1\nkind: Cluster\nmetadata: {name: lab}\nspec:\n  ssh:\n    user: ops\n    knownHostsFile: /dev/null\n    password: {file: "+key+"}\n  hosts:\n  - name: cp-1\n    address: 127.0.0.2\n    roles: [control-plane]\n")
	rc := writeFile(t, "bashrc", "export PATH=$PATH:/opt/bin\nalias ll='ls -l'\n")
	rcKnownHosts := writeFile(t, "rc.yaml", "apiVersion: gpukit.dev/v1alpha1\nkind: Cluster\nmetadata: {name: lab}\nspec:\n  ssh: {keyFile: "+key+", knownHostsFile: "+rc+"}\n  hosts:\n  - name: cp-1\n    address: 127.0.0.2\n    roles: [control-plane]\n")
	offlineKubeflow := writeFile(t, "kf.yaml", "apiVersion: gpukit.dev/v1alpha1\nkind: Cluster\nmetadata: {name: lab}\nspec:\n  orchestrator: kubernetes\n  ssh: {knownHostsFile: /dev/null}\n"+
		"  kubeflow: {enabled: true, manifests: /nonexistent/manifests-26.03.tar.gz}\n  hosts:\n  - name: cp-1\n    address: 127.0.0.2\n    roles: [control-plane]\n")
	// .invalid never resolves (RFC 6761).
	swarmInv := writeFile(t, "swarm.yaml", "apiVersion: gpukit.dev/v1alpha1\nkind: Cluster\nmetadata: {name: lab}\nspec:\n  orchestrator: swarm\n  ssh: {knownHostsFile: /dev/null}\n  hosts:\n  - name: m-1\n    address: 127.0.0.2\n    roles: [manager]\n")
	unresolvable := writeFile(t, "dns.yaml", "apiVersion: gpukit.dev/v1alpha1\nkind: Cluster\nmetadata: {name: lab}\nspec:\n  ssh: {knownHostsFile: /dev/null}\n  hosts:\n  - name: cp-1\n    address: cp-1.gpukit.invalid\n    roles: [control-plane]\n")
	tests := []struct {
		name       string
		args       []string
		code       int
		wantOut    string
		wantStderr string
	}{
		{"plan: a host name that resolves nowhere is bad input, before any dial", []string{"plan", "-i", unresolvable}, ExitUsage, "", `dns.yaml:7:5: host cp-1: address "cp-1.gpukit.invalid" does not resolve on this machine`},
		{"init: a malformed --driver names the flag", []string{"init", "-i", loopback, "--driver", "58o"}, ExitUsage, "", `--driver: spec.versions.nvidiaDriver: malformed driver version "58o"`},
		{"init: --cuda the driver cannot run", []string{"plan", "-i", loopback, "--driver", "535", "--cuda", "13.0"}, ExitUsage, "", "--cuda: spec.versions.cuda: CUDA 13.0 needs NVIDIA driver branch 580 or newer, but nvidiaDriver is 535"},
		{"init: reboots at once", []string{"init", "-i", loopback, "--max-parallel-reboots", "0"}, ExitUsage, "", "--max-parallel-reboots 0: want 1 or more"},
		{"plan: unknown phase", []string{"plan", "-i", loopback, "--only-phases", "nvidia/drivers"}, ExitUsage, "", "--only-phases nvidia/drivers: unknown phase; valid phases: preflight, preflight/facts"},
		{"escape sequences are escaped", []string{"inventory", "validate", "-i", escapes}, ExitUsage, "", `"cp\x1bc" contains '\x1b'`},
		{"a private key as a password file", []string{"preflight", "-i", keyAsPassword}, ExitUsage, "", "holds a private key"},
		{"a shell rc file as known_hosts", []string{"preflight", "-i", rcKnownHosts, "--accept-new-host-keys"}, ExitUsage, "", "line 1 is not a known_hosts entry"},
		{"valid inventory", []string{"inventory", "validate", "-i", example}, ExitOK, "valid", ""},
		{"invalid inventory names file line field", []string{"inventory", "validate", "-i", bad}, ExitUsage, "", bad + `:9:5: spec.hosts[0].colour: unknown field "colour"`},
		{"missing inventory file", []string{"inventory", "validate", "-i", "/nonexistent/cluster.yaml"}, ExitUsage, "", "/nonexistent/cluster.yaml"},
		{"no -i", []string{"inventory", "validate"}, ExitUsage, "", "pass -i FILE"},
		{"unknown flag", []string{"inventory", "validate", "--colour"}, ExitUsage, "", "unknown flag"},
		{"unexpected argument", []string{"version", "extra"}, ExitUsage, "", "accepts 0 arg"},
		{"unknown import source", []string{"inventory", "import", "--from", "chef", example}, ExitUsage, "", "only source format is ansible"},
		{"completion", []string{"completion", "bash"}, ExitOK, "bash completion", ""},
		{"completion unknown shell", []string{"completion", "tcsh"}, ExitUsage, "", "tcsh"},
		{"version", []string{"version"}, ExitOK, "spec.versions.nvidiaDriver", ""},
		{"unknown phase names its flag and the valid ones", []string{"preflight", "-i", loopback, "--only-phases", "nvidia"}, ExitUsage, "",
			"--only-phases nvidia: unknown phase; valid phases: preflight, preflight/facts, preflight/checks, preflight/cluster"},
		{"unknown phase to skip", []string{"preflight", "-i", loopback, "--skip-phases", "preflight/fact"}, ExitUsage, "", "--skip-phases preflight/fact: unknown phase"},
		{"version output format", []string{"version", "-o", "yaml"}, ExitUsage, "", "want auto, plain or json"},
		{"import has no -o", []string{"inventory", "import", "--from", "ansible", "-o", "x.yaml", example}, ExitUsage, "", "unknown shorthand flag: 'o'"},
		{"bad output format", []string{"preflight", "-i", loopback, "-o", "yaml"}, ExitUsage, "", "want auto, plain or json"},
		{"missing secret is bad input", []string{"preflight", "-i", needsSecret}, ExitUsage, "", "GPUKIT_TEST_UNSET_PASSWORD"},
		{"preflight of an invalid inventory", []string{"preflight", "-i", bad}, ExitUsage, "", "unknown field"},
		{"kubeflow deploy on swarm points at platform deploy", []string{"kubeflow", "deploy", "-i", swarmInv}, ExitUsage, "",
			"spec.orchestrator is swarm: Kubeflow runs on Kubernetes only; gpukit platform deploy -i " + swarmInv + " deploys the platform"},
		{"platform deploy of an invalid inventory", []string{"platform", "deploy", "-i", bad}, ExitUsage, "", bad + ":9:5: spec.hosts[0].colour"},
		{"kubeflow deploy needs a cluster", []string{"kubeflow", "deploy"}, ExitUsage, "", "no cluster: pass -i FILE (the inventory of a cluster gpukit built), --kubeconfig PATH or --context NAME (no kubeconfig in "},
		{"kubeflow deploy of an unknown release", []string{"kubeflow", "deploy", "-i", loopback, "--version", "v1.8.0"}, ExitUsage, "", "--version v1.8.0: gpukit deploys v1.9.0, v1.9.1, v1.10.0, v1.10.1, v1.10.2, v1.11.0, 26.03"},
		{"kubeflow deploy of missing manifests", []string{"kubeflow", "deploy", "-i", loopback, "--manifests", "/nonexistent/kf.tar.gz"}, ExitUsage, "", "--manifests /nonexistent/kf.tar.gz"},
		{"kubeflow deploy of the inventory's missing manifests", []string{"kubeflow", "deploy", "-i", offlineKubeflow}, ExitUsage, "", offlineKubeflow + ": spec.kubeflow: manifests: stat /nonexistent/manifests-26.03.tar.gz: no such file or directory"},
		{"init of the inventory's missing manifests", []string{"init", "-i", offlineKubeflow}, ExitUsage, "", offlineKubeflow + ": spec.kubeflow: manifests: stat /nonexistent/manifests-26.03.tar.gz: no such file or directory"},
		{"kubeflow deploy with a broken kubeconfig", []string{"kubeflow", "deploy", "--kubeconfig", rc}, ExitUsage, "", "--kubeconfig " + rc},
		{"kubeflow deploy of an invalid inventory", []string{"kubeflow", "deploy", "-i", bad}, ExitUsage, "", bad + ":9:5: spec.hosts[0].colour"},
		{"kubeflow deploy: unknown phase", []string{"kubeflow", "deploy", "-i", loopback, "--skip-phases", "kubeflow/manifest"}, ExitUsage, "", "--skip-phases kubeflow/manifest: unknown phase; valid phases: platform, platform/storage, platform/ingress, platform/monitoring, platform/gpu-metrics, platform/training-metrics, platform/dashboards, kubeflow, kubeflow/manifests, platform/routes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := run(t, tt.args...)
			if code != tt.code {
				t.Errorf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tt.code, out, errOut)
			}
			if !strings.Contains(out, tt.wantOut) {
				t.Errorf("stdout %q does not contain %q", out, tt.wantOut)
			}
			if !strings.Contains(errOut, tt.wantStderr) {
				t.Errorf("stderr %q does not contain %q", errOut, tt.wantStderr)
			}
			if strings.ContainsAny(out+errOut, "\x1b\a\u202e") {
				t.Errorf("raw control characters in the output: %q", out+errOut)
			}
		})
	}
}

func TestValidateSummarisesARangedInventory(t *testing.T) {
	p := writeFile(t, "big.yaml", `apiVersion: gpukit.dev/v1alpha1
kind: Cluster
metadata: {name: rack}
spec:
  ssh: {user: root, knownHostsFile: /etc/ssh/ssh_known_hosts}
  hosts:
  - name: cp-[1:3]
    address: 10.0.0.[1:3]
    roles: [control-plane]
  - name: gpu-[001:200]
    address: 10.0.1.[1:200]
    roles: [worker]
`)
	code, out, errOut := run(t, "inventory", "validate", "-i", p)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"203 host(s)", "control-plane     3  cp-1, cp-2, cp-3", "worker          200  gpu-001, gpu-002, gpu-003, gpu-004, gpu-005, ... gpu-200", "nvidia driver 580.95.05"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
}

func TestSchemaAndExample(t *testing.T) {
	code, out, _ := run(t, "inventory", "schema")
	if code != ExitOK || !json.Valid([]byte(out)) {
		t.Fatalf("schema: exit %d, valid JSON %v", code, json.Valid([]byte(out)))
	}
	code, out, _ = run(t, "inventory", "example")
	if code != ExitOK || !strings.Contains(out, "apiVersion: gpukit.dev/v1alpha1") {
		t.Fatalf("example: exit %d\n%s", code, out)
	}
}

func TestVersionJSON(t *testing.T) {
	code, out, _ := run(t, "version", "-o", "json")
	var v struct {
		Version   string            `json:"version"`
		GoVersion string            `json:"goVersion"`
		Defaults  map[string]string `json:"defaults"`
		Bill      manifests.BOM     `json:"bill"`
	}
	if code != ExitOK || json.Unmarshal([]byte(out), &v) != nil {
		t.Fatalf("exit %d: %s", code, out)
	}
	if v.Version == "" || !strings.HasPrefix(v.GoVersion, "go") || v.Defaults["spec.versions.cuda"] == "" {
		t.Errorf("%+v", v)
	}
	// The whole bill: every pinned chart and image, not only the defaults.
	if !reflect.DeepEqual(&v.Bill, manifests.Bill()) {
		t.Errorf("version -o json's bill differs from manifests/bom.yaml:\n%+v", v.Bill)
	}
	code, out, _ = run(t, "version")
	for _, want := range []string{"kube-prometheus-stack", "88.5.3", manifests.Bill().Image("statsd-exporter").Ref, "26.03 (default)", "590.44.01", "EB693B3035CD5710E231E123A4B469963BF863CC", "repodata/repomd.xml.key",
		"Kepler          470 or older     11.8 or older  no", "Blackwell       570 or newer     12.8 or newer  yes"} {
		if code != ExitOK || !strings.Contains(out, want) {
			t.Errorf("gpukit version (exit %d) lacks %q:\n%s", code, want, out)
		}
	}
}

// The real DeepOps inventory, with its commented-out hosts switched on,
// converts into an inventory that validates.
func TestImportDeepOps(t *testing.T) {
	src := sharedFixture(t, "inventories", "deepops-26.07__inventory.ini")
	vars := sharedFixture(t, "inventories", "deepops-26.07__group_vars__k8s_cluster.yml")
	raw, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	code, _, errOut := run(t, "inventory", "import", "--from", "ansible", src)
	if code != ExitUsage || !strings.Contains(errOut, "no hosts") {
		t.Errorf("template with every host commented out: exit %d, stderr %s", code, errOut)
	}
	var lines []string
	for _, l := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(l, "#") && len(l) > 1 && (l[1] >= 'a' && l[1] <= 'z') {
			l = l[1:]
		}
		lines = append(lines, l)
	}
	ini := writeFile(t, "inventory.ini", strings.Join(lines, "\n"))
	outFile := filepath.Join(t.TempDir(), "cluster.yaml")
	code, _, errOut = run(t, "inventory", "import", "--from", "ansible", "--group-vars", "k8s_cluster="+vars, "--output-file", outFile, ini)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(errOut, "gpukit does not install Slurm") {
		t.Errorf("Slurm groups not reported as unmapped:\n%s", errOut)
	}
	if strings.Contains(errOut, "needs editing") {
		t.Errorf("converted DeepOps inventory does not validate:\n%s", errOut)
	}
	code, out, errOut := run(t, "inventory", "validate", "-i", outFile)
	if code != ExitOK || !strings.Contains(out, "control-plane") {
		t.Fatalf("validate converted: exit %d\n%s\n%s", code, out, errOut)
	}
}

// An import without a control plane still writes the file, and says once
// (from the converter's own load of it) that it needs editing.
func TestImportNeedsEditing(t *testing.T) {
	ini := writeFile(t, "hosts.ini", "[kube_node]\ngpu01 ansible_host=10.0.1.1\n")
	code, out, errOut := run(t, "inventory", "import", "--from", "ansible", ini)
	if code != ExitOK || !strings.Contains(out, "apiVersion: gpukit.dev/v1alpha1") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	if strings.Count(errOut, "needs editing") != 1 || !strings.Contains(errOut, "gpukit validation fails until this is fixed") {
		t.Errorf("stderr:\n%s", errOut)
	}
}
