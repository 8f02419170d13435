package ansible

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpukit/gpukit/pkg/inventory"
)

func readTestdata(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "kubekey", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestKubeKeyInventory converts a KubeKey v4 Inventory for a small DGX pod:
// control planes and workers from kube_control_plane and kube_worker, the
// connector's fields as SSH settings, KubeKey's variable precedence, and
// the password never in the output.
func TestKubeKeyInventory(t *testing.T) {
	t.Parallel()
	const name = "v4-inventory.yaml"
	res := mustConvert(t, Input{Name: name, Data: readTestdata(t, name)})
	if res.Source != SourceKubeKey {
		t.Errorf("Source = %q", res.Source)
	}
	want := []string{"ctrl-[01:03] 172.16.0.[11:13] control-plane", "dgx-[01:03] 172.16.1.[21:23] worker"}
	if got := hostLines(res.Cluster); !equalStrings(got, want) {
		t.Errorf("hosts:\n got %q\nwant %q", got, want)
	}
	cl := res.Cluster
	if cl.Metadata.Name != "dgx-pod1" {
		t.Errorf("metadata.name = %q, want the Inventory's", cl.Metadata.Name)
	}
	ssh := cl.Spec.SSH
	if ssh.User != "kkadmin" || ssh.Password == nil || ssh.Password.Env != EnvSSHPassword ||
		ssh.Sudo == nil || ssh.Sudo.Password == nil || ssh.Sudo.Password.Env != EnvSSHPassword {
		t.Errorf("spec.ssh = %+v (sudo %+v): want kkadmin, and the connector password as SSH and sudo password", ssh, ssh.Sudo)
	}
	// k8s_cluster's port 2200 reaches nobody (it lists no host itself);
	// kube_worker's port and key reach its hosts.
	if cp := cl.Spec.Hosts[0]; cp.SSH != nil && cp.SSH.Port != 0 {
		t.Errorf("control planes got port %d from k8s_cluster's vars", cp.SSH.Port)
	}
	if w := cl.Spec.Hosts[1].SSH; w == nil || w.Port != 2222 || w.KeyFile != "~/.ssh/dgx_ed25519" {
		t.Errorf("workers' ssh = %+v, want port 2222 and kube_worker's key", w)
	}
	out := Render(res)
	if strings.Contains(string(out), "lab-only-password") {
		t.Error("the connector password was copied into the inventory")
	}
	requireNotes(t, res,
		name+":14: variable connector.password: the SSH password is never copied",
		name+":14: variable connector.password: is the sudo password too",
		name+":31: variable internal_ipv4: set on 3 host(s) (dgx-01, dgx-02, dgx-03), not converted: KubeKey binds",
		name+":47: group k8s_cluster: its vars reach no host",
		name+":68: variable kubernetes: set on 3 host(s)",
		name+":71: group etcd: gpukit runs etcd stacked on the control-plane hosts, which are the etcd hosts here",
		"host registry-01: not converted: in groups with no gpukit meaning (image_registry)")
	// The control planes' internal_ipv4 is their address: nothing to say.
	forbidNotes(t, res, "ctrl-01", "metadata.name", "ansible_")
	if !res.Valid {
		t.Errorf("not valid:\n%s", notesText(res))
	}
	goldenFile(t, "kubekey-v4", out)
	mustLoad(t, out)
}

// kk is a KubeKey v4 Inventory with the given spec (indented by the caller).
func kk(metadata, spec string) []byte {
	return []byte("apiVersion: kubekey.kubesphere.io/v1\nkind: Inventory\n" + metadata + "spec:\n" + spec)
}

func TestKubeKeyMapping(t *testing.T) {
	t.Parallel()
	const group = "  groups:\n    kube_control_plane:\n      hosts: [cp]\n"
	for _, tc := range []struct {
		name     string
		data     []byte
		given    string // Input.ClusterName
		check    func(*testing.T, inventory.Cluster)
		notes    []string
		forbid   []string
		secret   string // must not reach the rendered inventory
		wantName string
	}{
		{name: "KubeKey's defaults: the name as address, root", data: kk("", "  hosts:\n    cp: {}\n"+group),
			check: func(t *testing.T, cl inventory.Cluster) {
				if h := cl.Spec.Hosts[0]; h.Address != "cp" || cl.Spec.SSH.User != "root" {
					t.Errorf("host %+v, spec.ssh %+v", h, cl.Spec.SSH)
				}
			},
			notes:  []string{"the KubeKey Inventory has no metadata.name"},
			forbid: []string{"no ansible_user", "Ansible"}},
		{name: "root with a password: no sudo", data: kk("", "  hosts:\n    cp: {connector: {host: 10.0.0.1, password: PW-XYZ}}\n"+group),
			check: func(t *testing.T, cl inventory.Cluster) {
				if s := cl.Spec.SSH; s.Password == nil || s.Sudo != nil {
					t.Errorf("spec.ssh = %+v", s)
				}
			},
			forbid: []string{"sudo password", "PW-XYZ"}, secret: "PW-XYZ"},
		{name: "private key, port", data: kk("", "  hosts:\n    cp: {connector: {host: cp.example.com, port: \"2022\", user: ops, private_key: ~/.ssh/k}}\n"+group),
			check: func(t *testing.T, cl inventory.Cluster) {
				if s := cl.Spec.SSH; s.User != "ops" || s.Port != 2022 || s.KeyFile != "~/.ssh/k" || s.Sudo != nil {
					t.Errorf("spec.ssh = %+v", s)
				}
				if cl.Spec.Hosts[0].Address != "cp.example.com" {
					t.Errorf("address %q", cl.Spec.Hosts[0].Address)
				}
			}},
		{name: "a bad port names connector.port", data: kk("", "  hosts:\n    cp: {connector: {host: 10.0.0.1, port: ssh}}\n"+group),
			notes: []string{":5: variable connector.port: port \"ssh\" is not a number"}},
		{name: "precedence: spec.vars, then the host's groups, then the host, field by field",
			data: kk("", "  vars:\n    connector: {user: a, port: 1001}\n  hosts:\n    cp: {connector: {host: 10.0.0.1}}\n"+
				"    w: {connector: {host: 10.0.0.2, port: 3003}}\n"+
				"  groups:\n    kube_control_plane:\n      hosts: [cp]\n      vars: {connector: {user: b, port: 2002}}\n"+
				"    kube_worker:\n      hosts: [w]\n      vars: {connector: {user: c}}\n"),
			check: func(t *testing.T, cl inventory.Cluster) {
				cp, w := cl.Spec.Hosts[0].SSH, cl.Spec.Hosts[1].SSH
				if cp == nil || w == nil || cp.User != "b" || cp.Port != 2002 || w.User != "c" || w.Port != 3003 {
					t.Errorf("control plane ssh %+v, worker ssh %+v", cp, w)
				}
			}},
		{name: "local connector", data: kk("", "  hosts:\n    cp: {connector: {type: local}}\n"+group),
			notes: []string{"variable connector.type: connector.type=local is not converted"}},
		{name: "kubernetes connector", data: kk("", "  hosts:\n    cp: {connector: {type: kubernetes, kubeconfig: /k}}\n"+group),
			notes: []string{`variable connector.type: gpukit reaches hosts over SSH only; connection "kubernetes"`,
				"variable connector.kubeconfig: set on 1 host(s) (cp), not converted"}},
		{name: "localhost is KubeKey's local machine", data: kk("", "  hosts:\n    localhost: {}\n  groups:\n    kube_control_plane:\n      hosts: [localhost]\n"),
			notes: []string{"host localhost: KubeKey runs a host named localhost on the machine it runs on"}},
		{name: "a key's content is not copied", data: kk("", "  hosts:\n    cp: {connector: {host: 10.0.0.1, private_key_content: SECRETKEYBYTES}}\n"+group),
			notes:  []string{"variable connector.private_key_content: set on 1 host(s) (cp), not converted: a private key is never copied"},
			forbid: []string{"SECRETKEYBYTES"}, secret: "SECRETKEYBYTES"},
		{name: "template values", data: kk("", "  hosts:\n    cp: {connector: {host: \"{{ .ip }}\"}}\n"+group),
			notes: []string{"a template that only KubeKey can evaluate"}, forbid: []string{"Jinja2"}},
		{name: "a host only in a group", data: kk("", "  hosts:\n"+group),
			check: func(t *testing.T, cl inventory.Cluster) {
				if h := cl.Spec.Hosts[0]; h.Name != "cp" || h.Address != "cp" {
					t.Errorf("host %+v", h)
				}
			},
			notes: []string{":7: host cp: is in group kube_control_plane but not under spec.hosts"}},
		{name: "a name that is no address", data: kk("", "  hosts:\n    Node_1: {}\n  groups:\n    kube_control_plane:\n      hosts: [Node_1]\n"),
			notes: []string{"host Node_1: has no connector.host and its name is not an IP address or DNS name"}},
		{name: "a node IP of its own", data: kk("", "  hosts:\n    cp: {connector: {host: 10.0.0.1}, internal_ipv4: 10.9.0.1, internal_ipv6: \"fd00::1\"}\n"+group),
			notes: []string{"variable internal_ipv4: set on 1 host(s)", "variable internal_ipv6: set on 1 host(s)"}},
		{name: "metadata.name", data: kk("metadata:\n  name: pod-a\n", "  hosts:\n"+group), wantName: "pod-a",
			forbid: []string{"metadata.name"}},
		{name: "KubeKey's template name", data: kk("metadata:\n  name: default\n", "  hosts:\n"+group), wantName: DefaultClusterName,
			notes: []string{`:4: metadata.name: "default" is the name KubeKey's inventory template ships with`}},
		{name: "--name wins", data: kk("metadata:\n  name: pod-a\n", "  hosts:\n"+group), given: "pod-b", wantName: "pod-b"},
		{name: "fields KubeKey does not have", data: []byte("apiVersion: kubekey.kubesphere.io/v1\nkind: Inventory\nextra: 1\nspec:\n  hostz: {}\n" + "  hosts:\n" + group),
			notes: []string{":3: extra: is not part of a KubeKey Inventory", ":5: spec.hostz: is not part of a KubeKey Inventory"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res := mustConvert(t, Input{Name: "inv.yaml", Data: tc.data, ClusterName: tc.given})
			if tc.check != nil {
				tc.check(t, res.Cluster)
			}
			if tc.wantName != "" && res.Cluster.Metadata.Name != tc.wantName {
				t.Errorf("metadata.name = %q, want %q", res.Cluster.Metadata.Name, tc.wantName)
			}
			requireNotes(t, res, tc.notes...)
			forbidNotes(t, res, tc.forbid...)
			if tc.secret != "" && strings.Contains(string(Render(res)), tc.secret) {
				t.Errorf("the rendered inventory holds %q", tc.secret)
			}
		})
	}
}

// A KubeKey Inventory that KubeKey itself could not read is an error at its line.
func TestKubeKeyErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, spec, want string
	}{
		{"spec is a list", "  - a\n", "inv.yaml:4: spec must be a mapping"},
		{"hosts as a list", "  hosts:\n    - cp\n", "inv.yaml:5: spec.hosts must be a mapping of host names"},
		{"group hosts as an Ansible mapping", "  groups:\n    kube_worker:\n      hosts:\n        gpu1: {}\n", "inv.yaml:7: group kube_worker: hosts must be a list of names"},
		{"Ansible's children", "  groups:\n    k8s_cluster:\n      children: [a]\n", `inv.yaml:6: group k8s_cluster: unexpected key "children" (a KubeKey group has hosts, groups and vars)`},
		{"a group that is not a mapping", "  groups:\n    kube_worker: [a]\n", "inv.yaml:5: group kube_worker must be a mapping"},
		{"connector not a mapping", "  hosts:\n    cp:\n      connector: ssh\n", "inv.yaml:6: connector must be a mapping"},
		{"a group cycle", "  hosts:\n    cp: {}\n  groups:\n    a: {groups: [b], hosts: [cp]}\n    b: {groups: [a]}\n", "group a is its own ancestor"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Convert(Input{Name: "inv.yaml", Data: kk("", tc.spec)})
			var pe *ParseError
			if !errors.As(err, &pe) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want a ParseError with %q", err, tc.want)
			}
		})
	}
	// One list named by every group through an alias: bounded, not walked forever.
	var b strings.Builder
	b.WriteString("  groups:\n    g0:\n      hosts: &a [")
	for i := range 100 {
		fmt.Fprintf(&b, "h%d, ", i)
	}
	b.WriteString("h]\n")
	for i := 1; i <= maxKubeKeyMembers/101+1; i++ {
		fmt.Fprintf(&b, "    g%d: {hosts: *a}\n", i)
	}
	if _, err := Convert(Input{Name: "inv.yaml", Data: kk("", b.String())}); err == nil || !strings.Contains(err.Error(), "the groups list more than") {
		t.Errorf("aliased lists: err = %v", err)
	}
	// No hosts at all: the same error as an empty Ansible inventory.
	if _, err := Convert(Input{Name: "inv.yaml", Data: kk("", "  hosts: {}\n")}); !errors.Is(err, ErrNoHosts) {
		t.Errorf("empty inventory: err = %v, want ErrNoHosts", err)
	}
}

// Files with an apiVersion other than KubeKey v4's Inventory are refused with
// an error that says what the file is, at the line of its apiVersion.
func TestForeignDocuments(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"KubeKey v3 Cluster", readTestdata(t, "v3-cluster.yaml"),
			"cluster.yaml:4: this is a KubeKey v3 Cluster (kubekey.kubesphere.io/v1alpha2): not supported; convert it to a KubeKey v4 Inventory"},
		{"k0sctl", readTestdata(t, "k0sctl-cluster.yaml"),
			"cluster.yaml:4: this is a k0sctl cluster file (k0sctl.k0sproject.io/v1beta1, kind Cluster): not supported"},
		{"gpukit inventory", inventory.Example(), "this is already a gpukit inventory (gpukit.dev/v1alpha1, kind Cluster): nothing to import"},
		{"KubeKey v4 Config", []byte("apiVersion: kubekey.kubesphere.io/v1\nkind: Config\nspec: {}\n"),
			"cluster.yaml:1: this is a KubeKey v4 Config (kubekey.kubesphere.io/v1): cluster settings, no hosts"},
		{"KubeKey Inventory of another version", []byte("kind: Inventory\napiVersion: kubekey.kubesphere.io/v1alpha1\n"),
			"cluster.yaml:2: this is a KubeKey Inventory of apiVersion kubekey.kubesphere.io/v1alpha1"},
		{"another KubeKey kind", []byte("apiVersion: kubekey.kubesphere.io/v1\nkind: Playbook\n"),
			"this is a KubeKey Playbook (kubekey.kubesphere.io/v1), not an inventory"},
		{"a Kubernetes object", []byte("apiVersion: apps/v1\nkind: Deployment\n"),
			"cluster.yaml:1: this is a Deployment (apiVersion apps/v1), not an Ansible inventory or a KubeKey v4 Inventory"},
		{"no kind", []byte("apiVersion: v1\n"), "this is a document with no kind (apiVersion v1)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Convert(Input{Name: "cluster.yaml", Data: tc.data})
			var pe *ParseError
			if !errors.As(err, &pe) || pe.Line == 0 || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want a ParseError at a line with %q", err, tc.want)
			}
		})
	}
	// A group named apiVersion in a real Ansible inventory is still a group.
	res := mustConvert(t, Input{Name: "hosts.yaml", Data: []byte("apiVersion:\n  hosts:\n    cp: {ansible_host: 10.0.0.1}\nkube_control_plane:\n  hosts:\n    cp:\n"), ClusterName: "c"})
	if got := hostLines(res.Cluster); !equalStrings(got, []string{"cp 10.0.0.1 control-plane"}) || res.Source != SourceAnsible {
		t.Errorf("hosts = %q, source %q", got, res.Source)
	}
}

// KubeKey reads no group_vars or host_vars; files given anyway are noted, not applied.
func TestKubeKeyIgnoresVarsFiles(t *testing.T) {
	t.Parallel()
	res := mustConvert(t, Input{Name: "inv.yaml", Data: kk("", "  hosts:\n    cp: {connector: {host: 10.0.0.1}}\n  groups:\n    kube_control_plane:\n      hosts: [cp]\n"),
		GroupVars: []VarsFile{{Name: "group_vars/all.yml", Data: []byte("ansible_user: ubuntu\n")}}})
	if u := res.Cluster.Spec.SSH.User; u != "root" {
		t.Errorf("user %q: group_vars applied to a KubeKey Inventory", u)
	}
	requireNotes(t, res, "group_vars/all.yml: variables file: not read: the inventory is a KubeKey Inventory")
}
