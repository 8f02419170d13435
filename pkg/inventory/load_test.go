package inventory

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestExampleLoadsClean(t *testing.T) {
	t.Parallel()
	inv, err := Parse("example.yaml", Example())
	if err != nil {
		t.Fatalf("example does not load:\n%v", err)
	}
	for _, w := range inv.Warnings {
		t.Errorf("example warning: %s", w)
	}
	names := machineNames(inv.Machines)
	want := "cp-1 gpu-001 gpu-002 gpu-003 gpu-004 dgx-01"
	if names != want {
		t.Errorf("machines = %s, want %s", names, want)
	}
	// The example demonstrates a per-host override: dgx-01 is root on 2222,
	// the rest inherit ubuntu on 22 with sudo.
	for _, m := range inv.Machines {
		wantUser, wantPort, wantSudo := "ubuntu", 22, true
		if m.Name == "dgx-01" {
			wantUser, wantPort, wantSudo = "root", 2222, false
		}
		if a := m.Access; a.User != wantUser || a.Port != wantPort || a.Sudo != wantSudo {
			t.Errorf("%s: ssh %s:%d sudo=%v, want %s:%d sudo=%v", m.Name, a.User, a.Port, a.Sudo, wantUser, wantPort, wantSudo)
		}
	}
	if !strings.Contains(string(Example()), "#   env: GPUKIT_SSH_PASSWORD") {
		t.Error("example no longer shows the commented-out password from env")
	}
}

func TestExampleIsACopy(t *testing.T) {
	t.Parallel()
	a := Example()
	a[0] = 'X'
	if Example()[0] == 'X' {
		t.Error("Example returned shared state")
	}
}

func TestDefaults(t *testing.T) {
	t.Parallel()
	inv := mustParse(t, minimal(""))
	s := inv.Cluster.Spec
	checks := []struct{ name, got, want string }{
		{"orchestrator", string(s.Orchestrator), "kubernetes"},
		{"nvidiaDriver", s.Versions.NvidiaDriver, "580.95.05"},
		{"cuda", s.Versions.CUDA, "13.0"},
		{"containerToolkit", s.Versions.ContainerToolkit, "1.20.0"},
		{"kubernetes", s.Versions.Kubernetes, "1.37.2"},
		{"runtime", s.Versions.Runtime, "containerd"},
		{"containerRuntime", s.Versions.ContainerRuntime, "2.3.1"},
		{"podCIDR", s.Network.PodCIDR, "10.244.0.0/16"},
		{"serviceCIDR", s.Network.ServiceCIDR, "10.96.0.0/12"},
		{"cni", s.Network.CNI, "flannel"},
		{"storage", s.Addons.Storage.Type, "local-path"},
		{"domain", s.Addons.Ingress.Domain, "10.0.0.10.nip.io"},
		{"kubeflow", s.Kubeflow.Version, "26.03"},
		{"ingress", fmt.Sprint(*s.Addons.Ingress.Enabled), "true"},
		{"monitoring", fmt.Sprint(*s.Addons.Monitoring.Enabled), "true"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("default %s = %q, want %q", c.name, c.got, c.want)
		}
	}
	m := inv.Machines[0].Access
	if m.User != "root" || m.Port != 22 || m.KnownHostsFile != "~/.ssh/known_hosts" || m.ConnectTimeout != 10*time.Second || m.Sudo {
		t.Errorf("default machine ssh = %+v", m)
	}
	if len(Defaults()) == 0 {
		t.Error("Defaults() is empty")
	}
}

func TestDefaultsDependOnOrchestratorAndRoles(t *testing.T) {
	t.Parallel()
	swarm := mustParse(t, `apiVersion: gpukit.dev/v1alpha1
kind: Cluster
metadata: {name: s}
spec:
  orchestrator: swarm
  hosts:
    - {name: m1, address: 10.0.0.1, roles: [manager]}
    - {name: w1, address: 10.0.0.2, roles: [worker]}
`)
	v := swarm.Cluster.Spec.Versions
	// Docker's version stays unset: Docker's repository gets the default,
	// Debian its own docker.io (pkg/bootstrap/swarm decides per host).
	if v.Runtime != "docker" || v.ContainerRuntime != "" || v.Kubernetes != "" {
		t.Errorf("swarm versions = %+v", v)
	}
	if n := swarm.Cluster.Spec.Network; n != (Network{}) {
		t.Errorf("swarm network defaulted: %+v", n)
	}
	if d := swarm.Cluster.Spec.Addons.Ingress.Domain; d != "10.0.0.1.nip.io" {
		t.Errorf("swarm domain = %s, want the manager's", d)
	}
	// The first ingress host wins over the control plane.
	k := mustParse(t, minimal(`    - {name: edge, address: 10.0.0.99, roles: [ingress]}
`))
	if d := k.Cluster.Spec.Addons.Ingress.Domain; d != "10.0.0.99.nip.io" {
		t.Errorf("domain = %s, want the ingress host's", d)
	}
}

func TestEffectiveSSHMerge(t *testing.T) {
	t.Parallel()
	inv := mustParse(t, `apiVersion: gpukit.dev/v1alpha1
kind: Cluster
metadata: {name: m}
spec:
  ssh:
    user: ubuntu
    keyFile: ~/.ssh/a
    connectTimeout: 30s
    bastion: {address: jump.lab}
    sudo:
      password: {env: SUDO_PW}
  hosts:
    - name: cp-1
      address: 10.0.0.10
      roles: [control-plane]
    - name: gpu-[1:2]
      address: 10.0.1.[1:2]
      roles: [worker]
      ssh:
        user: root
        port: 2200
        bastion: {address: jump2.lab, user: hop}
`)
	cp, gpu1, gpu2 := inv.Machines[0].Access, inv.Machines[1].Access, inv.Machines[2].Access
	if cp.User != "ubuntu" || cp.Port != 22 || cp.KeyFile != "~/.ssh/a" || cp.ConnectTimeout != 30*time.Second || !cp.Sudo {
		t.Errorf("cp-1 ssh = %+v", cp)
	}
	if cp.SudoPassword == nil || cp.SudoPassword.Env != "SUDO_PW" {
		t.Errorf("cp-1 sudo password not inherited: %+v", cp.SudoPassword)
	}
	if b := cp.Bastion; b == nil || b.Address != "jump.lab" || b.Port != 22 || b.User != "ubuntu" || b.KeyFile != "~/.ssh/a" {
		t.Errorf("cp-1 bastion = %+v", b)
	}
	if gpu1.User != "root" || gpu1.Port != 2200 || gpu1.KeyFile != "~/.ssh/a" || gpu1.ConnectTimeout != 30*time.Second {
		t.Errorf("gpu-1 ssh = %+v", gpu1)
	}
	// The host's sudo is inherited whole; sudo.enabled follows the
	// effective user only when nobody set it.
	if gpu1.Sudo {
		t.Error("gpu-1 (root) has sudo enabled")
	}
	if b := gpu1.Bastion; b == nil || b.Address != "jump2.lab" || b.User != "hop" {
		t.Errorf("gpu-1 bastion = %+v (a nested block is replaced whole)", b)
	}
	// Machines never share pointers with each other or with the cluster.
	gpu1.Bastion.User = "changed"
	gpu1.SudoPassword.Env = "CHANGED"
	if gpu2.Bastion.User != "hop" || inv.Cluster.Spec.Hosts[1].SSH.Bastion.User != "hop" ||
		gpu2.SudoPassword.Env != "SUDO_PW" || inv.Cluster.Spec.SSH.Sudo.Password.Env != "SUDO_PW" {
		t.Error("machines share SSH state")
	}
	if inv.Cluster.Spec.SSH.Port != 0 {
		t.Error("spec.ssh was defaulted in place; it must stay as written")
	}
}

func TestRangeMachinesKeepEntryPosition(t *testing.T) {
	t.Parallel()
	inv := mustParse(t, minimal(`    - name: gpu-[08:11]
      address: 10.0.1.[8:11]
      roles: [worker]
      labels: {pool: a}
`))
	got := machineNames(inv.Machines)
	if got != "cp-1 gpu-08 gpu-09 gpu-10 gpu-11" {
		t.Fatalf("machines = %s", got)
	}
	for _, m := range inv.Machines[1:] {
		if m.Pos.Line != 10 || m.Pos.Column != 7 || m.Pos.File != "test.yaml" {
			t.Errorf("%s at %v, want test.yaml:10:7", m.Name, m.Pos)
		}
		if m.Labels["pool"] != "a" || !m.HasRole(RoleWorker) {
			t.Errorf("%s lost labels or roles: %+v", m.Name, m)
		}
	}
	inv.Machines[1].Labels["pool"] = "changed"
	if inv.Machines[2].Labels["pool"] != "a" {
		t.Error("expanded machines share their labels map")
	}
}

func TestParseRange(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		first   string
		last    string
		count   int
		isRange bool
		err     string
	}{
		{in: "gpu-01", count: 1},
		{in: "gpu-[001:200]", first: "gpu-001", last: "gpu-200", count: 200, isRange: true},
		{in: "10.0.1.[1:200]", first: "10.0.1.1", last: "10.0.1.200", count: 200, isRange: true},
		{in: "n[1:10].lab", first: "n1.lab", last: "n10.lab", count: 10, isRange: true},
		// Zero padding on one end only: the width would be a guess (Ansible refuses it too).
		{in: "gpu-[01:100]", err: "range [01:100] mixes zero-padded and unpadded numbers; write [001:100] for names padded to 3 digits, or [1:100] for none"},
		{in: "gpu-[001:10]", err: "write [001:010] for names padded to 3 digits, or [1:10] for none"},
		{in: "gpu-[1:010]", err: "write [001:010] for names padded to 3 digits, or [1:10] for none"},
		{in: "gpu-[00:10]", first: "gpu-00", last: "gpu-10", count: 11, isRange: true},
		{in: "gpu-[0:9]", first: "gpu-0", last: "gpu-9", count: 10, isRange: true},
		{in: "gpu-[5:5]", first: "gpu-5", last: "gpu-5", count: 1, isRange: true},
		{in: "gpu-[1:10000]", first: "gpu-1", last: "gpu-10000", count: 10000, isRange: true},
		{in: "gpu-[1:10001]", err: "at most 10000"},
		{in: "gpu-[2:1]", err: "reversed range [2:1]; write [1:2]"},
		{in: "gpu-[1:2]-[1:2]", err: "more than one range"},
		{in: "gpu-[1-2]", err: "malformed range"},
		{in: "gpu-[:2]", err: "malformed range"},
		{in: "gpu-[1:]", err: "malformed range"},
		{in: "gpu-[-1:2]", err: "malformed range"},
		{in: "gpu-[1:2", err: "unterminated"},
		{in: "gpu-1:2]", err: "unmatched"},
		{in: "gpu-[1:9999999999]", err: "malformed range"},
		{in: "gpu-[1:2]]", err: "more than one range"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			got, err := expandField(tt.in)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("expandField(%q) error = %v, want %q", tt.in, err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("expandField(%q): %v", tt.in, err)
			}
			if len(got) != tt.count {
				t.Fatalf("expandField(%q) = %d values, want %d", tt.in, len(got), tt.count)
			}
			if tt.isRange && (got[0] != tt.first || got[len(got)-1] != tt.last) {
				t.Errorf("expandField(%q) = %s..%s, want %s..%s", tt.in, got[0], got[len(got)-1], tt.first, tt.last)
			}
		})
	}
}

// TestParseNeverPanicsOnShapes covers document shapes the fuzzer may take a
// while to find; each must give a ValidationError, never a panic.
func TestParseDocumentShapes(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		"empty":          "",
		"whitespace":     "   \n\n",
		"null":           "~",
		"scalar":         "hello",
		"list":           "[1, 2]",
		"two docs":       "a: 1\n---\nb: 2\n",
		"doc then bad":   "a: 1\n---\n[",
		"tab indent":     "spec:\n\thosts: []",
		"alias loop":     "a: &x [*x]\nspec: *x\n",
		"unknown anchor": "spec: *nope\n",
		"bad alias type": "metadata: &m {name: x}\nspec: {hosts: *m}\n",
		"complex key":    "? [a, b]\n: c\n",
		"bool key":       "true: 1\n",
		"null key":       "~: 1\n",
		"binary":         "apiVersion: !!binary aGVsbG8=\n",
		"custom tag":     "apiVersion: !foo bar\n",
		"huge int":       "spec: {ssh: {port: 99999999999999999999999}}\n",
		"hex int":        "spec: {ssh: {port: 0x16}}\n",
		"string hosts":   "spec: {hosts: abc}\n",
		"deep":           strings.Repeat("[", 5000) + strings.Repeat("]", 5000),
		"billion laughs": `a: &a ["x","x","x","x","x","x","x","x","x","x"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]
spec:
  hosts: [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]
`,
	}
	for name, doc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			inv, err := Parse("x.yaml", []byte(doc))
			var verr *ValidationError
			if !errors.As(err, &verr) || inv != nil {
				t.Fatalf("Parse = %v, %v; want a *ValidationError", inv, err)
			}
			if len(verr.Issues) == 0 {
				t.Fatal("ValidationError without issues")
			}
		})
	}
}

// TestAliasExpansionIsBounded: aliases nested through typed levels (hosts x
// taints) multiply; the decoder stops at a budget instead of exhausting memory.
func TestAliasExpansionIsBounded(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("t: &t [")
	for i := range 1000 {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString("a:NoSchedule")
	}
	b.WriteString("]\nh: &h {name: x, address: 10.0.0.1, roles: [worker], taints: *t}\n")
	b.WriteString("apiVersion: gpukit.dev/v1alpha1\nspec:\n  hosts: [")
	for i := range 1000 {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString("*h")
	}
	b.WriteString("]\n")
	_, err := Parse("x.yaml", []byte(b.String()))
	if err == nil || !strings.Contains(err.Error(), "YAML aliases expand to more than") {
		t.Fatalf("error = %v, want the alias budget", err)
	}
	if n := strings.Count(err.Error(), "\n") + 1; n > 10 {
		t.Errorf("%d issues after an aborted decode; want only the decode issues", n)
	}
}

func TestHexPortIsAccepted(t *testing.T) {
	t.Parallel()
	inv := mustParse(t, strings.Replace(minimal(""), "spec:\n", "spec:\n  ssh: {port: 0x16}\n", 1))
	if p := inv.Machines[0].Access.Port; p != 22 {
		t.Errorf("port = %d, want 22", p)
	}
}

// TestUnquotedVersionsKeepTheirText: YAML reads 13.10 as a number, but the
// decoder keeps the literal text, so no version is silently changed.
func TestUnquotedVersionsKeepTheirText(t *testing.T) {
	t.Parallel()
	doc := strings.Replace(minimal(""), "spec:\n", "spec:\n  versions: {nvidiaDriver: 580, cuda: 13.0}\n  kubeflow: {version: 26.03}\n", 1)
	inv := mustParse(t, doc)
	v := inv.Cluster.Spec.Versions
	if v.NvidiaDriver != "580" || v.CUDA != "13.0" || inv.Cluster.Spec.Kubeflow.Version != "26.03" {
		t.Errorf("versions = %+v, kubeflow %s", v, inv.Cluster.Spec.Kubeflow.Version)
	}
}

// A command's inventory (LoadFile): a missing file is a read error, not a
// ValidationError; a file with problems counts them before listing them;
// bytes read already are parsed, not read again.
func TestLoadFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad, good := filepath.Join(dir, "bad.yaml"), filepath.Join(dir, "good.yaml")
	for p, doc := range map[string]string{bad: minimal("    - name: cp-1\n      address: 10.0.0.11\n      roles: [worker]\n      colour: blue\n"), good: minimal("")} {
		if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name       string
		path       string
		data       []byte
		want       string // the error's start; "" for none
		validation bool
	}{
		{"no file", "", nil, "no inventory: pass -i FILE (gpukit inventory example writes one)", false},
		{"no file, bytes given", "", []byte(minimal("")), "no inventory: pass -i FILE", false},
		{"missing file", "testdata/does-not-exist.yaml", nil, "read inventory: open testdata/does-not-exist.yaml: no such file or directory", false},
		{"issues counted", bad, nil, bad + ": 2 error(s):\n" + bad + ":10:13: spec.hosts[1].name: duplicate host name \"cp-1\"", true},
		{"a valid file", good, nil, "", false},
		{"bytes read already", "never-read.yaml", []byte(minimal("")), "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inv, err := LoadFile(tc.path, tc.data, Overrides{})
			var verr *ValidationError
			switch {
			case tc.want == "" && (err != nil || len(inv.Machines) != 1):
				t.Fatalf("LoadFile(%q) = %v", tc.path, err)
			case tc.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.want)):
				t.Fatalf("LoadFile(%q) = %v; want %q...", tc.path, err, tc.want)
			case tc.want != "" && errors.As(err, &verr) != tc.validation:
				t.Errorf("LoadFile(%q): a *ValidationError %v, want %v", tc.path, !tc.validation, tc.validation)
			}
		})
	}
	if _, err := Load("testdata/does-not-exist.yaml"); err == nil || errors.As(err, new(*ValidationError)) {
		t.Errorf("Load(missing) = %v; want a read error, not a ValidationError", err)
	}
}

func TestIssueIsOneLine(t *testing.T) {
	t.Parallel()
	is := Issue{Pos: Position{File: "f", Line: 1, Column: 2}, Path: "p", Message: "a\nb\rc"}
	if got := is.String(); got != `f:1:2: p: a\nb\rc` {
		t.Errorf("String() = %q", got)
	}
	for _, tt := range []struct {
		pos  Position
		want string
	}{
		{Position{File: "f"}, "f"},
		{Position{File: "f", Line: 3}, "f:3"},
		{Position{File: "f", Line: 3, Column: 4}, "f:3:4"},
	} {
		if got := tt.pos.String(); got != tt.want {
			t.Errorf("%+v.String() = %q, want %q", tt.pos, got, tt.want)
		}
	}
}

func minimal(extraHosts string) string {
	return `apiVersion: gpukit.dev/v1alpha1
kind: Cluster
metadata:
  name: lab
spec:
  hosts:
    - name: cp-1
      address: 10.0.0.10
      roles: [control-plane]
` + extraHosts
}

func mustParse(t testing.TB, doc string) *Inventory {
	t.Helper()
	inv, err := Parse("test.yaml", []byte(doc))
	if err != nil {
		t.Fatalf("Parse:\n%v", err)
	}
	return inv
}

func machineNames(ms []Machine) string {
	names := make([]string, len(ms))
	for i, m := range ms {
		names[i] = m.Name
	}
	return strings.Join(names, " ")
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// Versions given on the command line replace the file's, are validated with
// it, and a problem names the flag.
func TestOverrides(t *testing.T) {
	t.Parallel()
	flags := func(driver, cuda string) Overrides {
		return Overrides{NvidiaDriver: Override{Value: driver, Flag: "--driver"}, CUDA: Override{Value: cuda, Flag: "--cuda"}}
	}
	inv, err := ParseWith("c.yaml", []byte(minimal("")), flags("590.48.01", "13.1"))
	if err != nil {
		t.Fatal(err)
	}
	if v := inv.Cluster.Spec.Versions; v.NvidiaDriver != "590.48.01" || v.CUDA != "13.1" || v.ContainerToolkit != DefaultContainerToolkit {
		t.Errorf("versions %+v", v)
	}
	_, err = ParseWith("c.yaml", []byte(minimal("")), flags("580.95.05", "13.1"))
	if err == nil || !strings.Contains(err.Error(), "--cuda: spec.versions.cuda: CUDA 13.1 needs NVIDIA driver 590.44.01 or newer, but nvidiaDriver is 580.95.05") {
		t.Errorf("incompatible override: %v", err)
	}
	_, err = ParseWith("c.yaml", []byte(minimal("")), flags("58o", ""))
	if err == nil || !strings.Contains(err.Error(), `--driver: spec.versions.nvidiaDriver: malformed driver version "58o"`) {
		t.Errorf("malformed override: %v", err)
	}
}

// The CUDA toolkit goes to hosts with the listed roles, unless a host says
// otherwise; the NVIDIA settings get their defaults.
func TestCUDAToolkitHosts(t *testing.T) {
	t.Parallel()
	inv := mustParse(t, `apiVersion: gpukit.dev/v1alpha1
kind: Cluster
metadata: {name: lab}
spec:
  nvidia: {cudaToolkitRoles: [worker]}
  hosts:
    - {name: cp-1, address: 10.0.0.10, roles: [control-plane]}
    - {name: cp-2, address: 10.0.0.11, roles: [control-plane], cudaToolkit: true}
    - {name: "gpu-[1:2]", address: "10.0.1.[1:2]", roles: [worker]}
    - {name: gpu-9, address: 10.0.1.9, roles: [worker], cudaToolkit: false}
`)
	want := map[string]bool{"cp-1": false, "cp-2": true, "gpu-1": true, "gpu-2": true, "gpu-9": false}
	for _, m := range inv.Machines {
		if m.CUDAToolkit != want[m.Name] {
			t.Errorf("%s: cudaToolkit %v", m.Name, m.CUDAToolkit)
		}
	}
	n := inv.Cluster.Spec.NVIDIA
	if n.DriverSource != "cuda-repo" || n.KernelModules != "auto" || n.SecureBoot != "refuse" || n.FabricManager != "auto" || n.RebootTimeout != "20m" {
		t.Errorf("nvidia defaults %+v", n)
	}
}

// The "sudo is off" warning looks at the user the block resolves to: root by
// default, or inherited from spec.ssh.
func TestSudoOffWarning(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, spec, host string
		want             []string // paths of the warnings
	}{
		{"default user is root", "sudo: {enabled: false}", "", nil},
		{"non-root user", "user: admin\n    sudo: {enabled: false}", "", []string{"spec.ssh.sudo.enabled"}},
		{"host inherits root", "user: root", "sudo: {enabled: false}", nil},
		{"host inherits a non-root user", "user: admin", "sudo: {enabled: false}", []string{"spec.hosts[0].ssh.sudo.enabled"}},
		{"host is root itself", "user: admin", "user: root\n        sudo: {enabled: false}", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := "apiVersion: gpukit.dev/v1alpha1\nkind: Cluster\nmetadata: {name: lab}\nspec:\n  ssh:\n    keyFile: /k\n    " + tc.spec +
				"\n  hosts:\n    - name: cp-1\n      address: 10.0.0.10\n      roles: [control-plane]\n"
			if tc.host != "" {
				doc += "      ssh:\n        " + tc.host + "\n"
			}
			inv, err := Parse("sudo.yaml", []byte(doc))
			if err != nil {
				t.Fatalf("%v\n%s", err, doc)
			}
			var got []string
			for _, w := range inv.Warnings {
				if strings.Contains(w.Message, "sudo is off") {
					got = append(got, w.Path)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("sudo warnings at %v, want %v", got, tc.want)
			}
		})
	}
}

// A host's ssh block overrides every field it sets: a field added to SSH
// but not to mergeSSH would silently fall back to spec.ssh.
func TestMergeSSHCoversEveryField(t *testing.T) {
	t.Parallel()
	yes := true
	host := SSH{User: "u", Port: 2222, KeyFile: "/k", KeyPassphrase: &SecretRef{Env: "P"}, Agent: &yes, Password: &SecretRef{Env: "W"},
		KnownHostsFile: "/kh", Bastion: &Bastion{Address: "10.0.0.1"}, Sudo: &Sudo{Enabled: &yes}, ConnectTimeout: "5s"}
	v := reflect.ValueOf(host)
	for i := range v.NumField() {
		if v.Field(i).IsZero() {
			t.Fatalf("the test sets no %s: add it", v.Type().Field(i).Name)
		}
	}
	if got := mergeSSH(SSH{}, &host); !reflect.DeepEqual(got, host) {
		t.Errorf("mergeSSH dropped host fields:\n got %+v\nwant %+v", got, host)
	}
}
