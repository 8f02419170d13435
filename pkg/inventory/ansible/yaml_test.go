package ansible

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// kubesprayYAML is the hosts.yaml layout Kubespray's inventory builder writes.
const kubesprayYAML = `all:
  hosts:
    node1:
      ansible_host: 10.0.0.1
      ip: 10.0.0.1
    node2:
      ansible_host: 10.0.0.2
    node3:
      ansible_host: 10.0.0.3
    gpu[01:03]:
      ansible_port: 2222
  vars:
    ansible_user: ubuntu
    ansible_become: yes
  children:
    kube_control_plane:
      hosts:
        node1:
    kube_node:
      hosts:
        node2:
        node3:
      children:
        gpu:
          hosts:
            gpu[01:03]:
    etcd:
      hosts:
        node1: {}
    k8s_cluster:
      children:
        kube_control_plane:
        kube_node:
      vars:
        kube_version: 1.35.0
`

func TestYAMLInventory(t *testing.T) {
	t.Parallel()
	res := mustConvert(t, Input{Name: "hosts.yaml", Data: []byte(kubesprayYAML), ClusterName: "c"})
	want := []string{"node1 10.0.0.1 control-plane", "node2 10.0.0.2 worker", "node3 10.0.0.3 worker", "gpu[01:03] gpu[01:03] worker"}
	if got := hostLines(res.Cluster); !equalStrings(got, want) {
		t.Errorf("hosts:\n got %q\nwant %q", got, want)
	}
	cl := res.Cluster
	if cl.Spec.SSH.User != "ubuntu" || cl.Spec.SSH.Sudo == nil || !*cl.Spec.SSH.Sudo.Enabled {
		t.Errorf("spec.ssh = %+v", cl.Spec.SSH)
	}
	if p := cl.Spec.Hosts[3].SSH.Port; p != 2222 {
		t.Errorf("gpu port = %d", p)
	}
	if cl.Spec.Versions.Kubernetes != "1.35.0" {
		t.Errorf("kubernetes = %q", cl.Spec.Versions.Kubernetes)
	}
	requireNotes(t, res, "hosts.yaml:5: variable ip: set on 1 host(s) (node1)", "hosts.yaml:27: group etcd: gpukit runs etcd stacked")
	mustLoad(t, Render(res))
}

func TestYAMLInventoryDetectedWithoutExtension(t *testing.T) {
	t.Parallel()
	res := mustConvert(t, Input{Name: "inventory", Data: []byte("# cluster\n---\nall:\n  children:\n    master:\n      hosts:\n        cp: {ansible_host: 10.0.0.1}\n"), ClusterName: "c"})
	if got := hostLines(res.Cluster); !equalStrings(got, []string{"cp 10.0.0.1 control-plane"}) {
		t.Errorf("hosts = %q", got)
	}
	// A lone string is a one-host section, as in Ansible.
	res = mustConvert(t, Input{Name: "x.yml", Data: []byte("kube_control_plane:\n  hosts: 10.0.0.9\n"), ClusterName: "c"})
	if got := hostLines(res.Cluster); !equalStrings(got, []string{"10-0-0-9 10.0.0.9 control-plane"}) {
		t.Errorf("hosts = %q", got)
	}
}

func TestYAMLErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, src, want string
	}{
		{"syntax", "all:\n  hosts:\n    a: [\n", "inv.yml:3: did not find expected node content"},
		{"hosts as a list", "all:\n  hosts:\n    - a\n    - b\n", "inv.yml:3: group all: hosts must be a mapping (name: {...}), not a list"},
		{"unexpected key", "all:\n  host:\n    a:\n", "inv.yml:2: group all: unexpected key \"host\""},
		{"not a mapping", "- a\n", "inv.yml:1: an Ansible YAML inventory must be a mapping of groups"},
		{"plugin config", "plugin: amazon.aws.aws_ec2\nregions: [us-east-1]\n", "inv.yml:1: this is a dynamic inventory plugin configuration"},
		{"bad host vars", "all:\n  hosts:\n    a: 3\n", "inv.yml:3: variables must be a mapping"},
		{"bad range", "all:\n  hosts:\n    a[3:1]:\n", "inv.yml:3: host pattern \"a[3:1]\": range [3:1]: begin is after end"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Convert(Input{Name: "inv.yml", Data: []byte(tt.src)})
			var pe *ParseError
			if !errors.As(err, &pe) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want a ParseError containing %q", err, tt.want)
			}
		})
	}
}

func TestVarsFileErrors(t *testing.T) {
	t.Parallel()
	_, err := Convert(Input{Name: "inv.ini", Data: []byte("[kube_node]\nw\n"),
		GroupVars: []VarsFile{{Name: "group_vars/all.yml", Data: []byte("a: 1\nb: [\n")}}})
	if err == nil || !strings.HasPrefix(err.Error(), "group_vars/all.yml:") {
		t.Fatalf("err = %v, want it to name group_vars/all.yml:line", err)
	}
	_, err = Convert(Input{Name: "inv.ini", Data: []byte("[kube_node]\nw\n"),
		GroupVars: []VarsFile{{Name: "group_vars/all.yml", Data: []byte("- a\n")}}})
	if err == nil || !strings.Contains(err.Error(), "group_vars/all.yml:1: variables must be a mapping") {
		t.Fatalf("err = %v", err)
	}
}

func TestVaultAndTemplateValues(t *testing.T) {
	t.Parallel()
	vars := "ansible_user: !vault |\n  $ANSIBLE_VAULT;1.1;AES256\n  6162\nansible_become_password: \"{{ vault_sudo }}\"\nkube_version: \"{{ kube_version_default }}\"\n"
	res := mustConvert(t, Input{Data: []byte("[kube_control_plane]\ncp ansible_host=10.0.0.1\n"), ClusterName: "c",
		GroupVars: []VarsFile{{Name: "all.yml", Data: []byte(vars)}}})
	if res.Cluster.Spec.SSH.User != "" || res.Cluster.Spec.Versions.Kubernetes != "" {
		t.Errorf("spec = %+v", res.Cluster.Spec)
	}
	if s := res.Cluster.Spec.SSH.Sudo; s == nil || s.Password == nil || s.Password.Env != EnvSudoPassword {
		t.Errorf("sudo = %+v", s)
	}
	requireNotes(t, res,
		"all.yml:1: variable ansible_user: the value is vault-encrypted and is not converted",
		"all.yml:4: variable ansible_become_password: the sudo password is never copied into a gpukit inventory; it is read from the environment variable GPUKIT_SUDO_PASSWORD, so export it before running gpukit; the inventory holds a template or vault value",
		"all.yml:5: variable kube_version: the value \"{{ kube_version_default }}\" is a Jinja2 template")
}

func TestFormatParsing(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]Format{"": FormatAuto, "auto": FormatAuto, "INI": FormatINI, "yml": FormatYAML, "yaml": FormatYAML} {
		got, err := ParseFormat(in)
		if err != nil || got != want {
			t.Errorf("ParseFormat(%q) = %v, %v", in, got, err)
		}
	}
	if _, err := ParseFormat("json"); err == nil {
		t.Error("ParseFormat(json): no error")
	}
	for name, want := range map[string]Format{"a.ini": FormatINI, "a.yaml": FormatYAML, "hosts": FormatINI} {
		if got := detectFormat(name, []byte("[all]\nh\n")); got != want {
			t.Errorf("detectFormat(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestYAMLAliasBombIsRefused(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("all:\n  children:\n    l0: &l0 {hosts: {h: {ansible_host: 10.0.0.1}}}\n")
	for i := 1; i <= 20; i++ {
		fmt.Fprintf(&b, "    l%d: &l%d {children: {a%d: *l%d, b%d: *l%d}}\n", i, i, i, i-1, i, i-1)
	}
	_, err := Convert(Input{Name: "bomb.yml", Data: []byte(b.String())})
	if err == nil || !strings.Contains(err.Error(), "nests more than") {
		t.Fatalf("err = %v", err)
	}
}

// TestGroupPriority follows ansible_group_priority between sibling groups;
// without it the alphabetically later group wins, as in Ansible.
func TestGroupPriority(t *testing.T) {
	t.Parallel()
	src := func(priority string) string {
		return "all:\n  children:\n    kube_control_plane:\n      hosts:\n        cp: {ansible_host: 10.0.0.1}\n" +
			"    alpha:\n      hosts: {cp: }\n      vars: {ansible_user: alpha" + priority + "}\n" +
			"    beta:\n      hosts: {cp: }\n      vars: {ansible_user: beta}\n"
	}
	res := mustConvert(t, Input{Name: "inv.yml", Data: []byte(src("")), ClusterName: "c"})
	if u := res.Cluster.Spec.SSH.User; u != "beta" {
		t.Errorf("user = %q, want beta", u)
	}
	res = mustConvert(t, Input{Name: "inv.yml", Data: []byte(src(", ansible_group_priority: 10")), ClusterName: "c"})
	if u := res.Cluster.Spec.SSH.User; u != "alpha" {
		t.Errorf("user = %q, want alpha", u)
	}
}
