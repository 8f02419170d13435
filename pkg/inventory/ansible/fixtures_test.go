package ansible

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gpukit/gpukit/test/fixtures"
	"github.com/gpukit/gpukit/test/golden"

	"github.com/gpukit/gpukit/pkg/inventory"
)

// Fixture file names in the fixtures cache's inventories (make fixtures).
const (
	deepopsInventory = "deepops-26.07__inventory.ini"
	deepopsGroupVars = "deepops-26.07__group_vars__k8s_cluster.yml"
)

// fixturesDir is the fixtures cache's inventories; the test skips when they
// are missing (fails with GPUKIT_LAB=1).
func fixturesDir(t *testing.T) string { return fixtures.Dir(t, "inventories") }

func readFixture(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(fixturesDir(t), name))
	if err != nil {
		t.Skipf("fixture %s not readable: %v", name, err)
	}
	return data
}

// goldenFile compares got with testdata/name.golden, or rewrites it under -update.
func goldenFile(t *testing.T, name string, got []byte) {
	t.Helper()
	golden.Assert(t, filepath.Join("testdata", name+".golden"), got)
}

// uncomment turns a template inventory into a real one the way an operator
// does: the leading '#' goes from every commented line that is a host entry
// ("#gpu01  ansible_host=10.0.2.1", "# node1 ansible_host=..."), and with
// vars also from the key=value lines of [group:vars] sections. Headings such
// as "# KUBERNETES" stay comments. This is deliberately independent of the
// parser's own template detection.
func uncomment(data []byte, vars bool) []byte {
	hostLine := regexp.MustCompile(`^#(\S+(?:\s+\w+=\S+)*|\s+\S+(?:\s+\w+=\S+)+)\s*(#.*)?$`)
	varLine := regexp.MustCompile(`^#(\w+=.*)$`)
	lines := strings.Split(string(data), "\n")
	inVars := false
	for i, l := range lines {
		if strings.HasPrefix(l, "[") {
			inVars = strings.HasSuffix(strings.TrimSpace(l), ":vars]")
			continue
		}
		switch {
		case inVars && vars && varLine.MatchString(l):
			lines[i] = varLine.FindStringSubmatch(l)[1]
		case !inVars && hostLine.MatchString(l) && !strings.HasPrefix(l, "##"):
			lines[i] = strings.TrimSpace(l[1:])
		}
	}
	return []byte(strings.Join(lines, "\n"))
}

// TestDeepOpsTemplate: the fixture as shipped has every host commented out;
// converting it must say exactly that instead of writing an empty cluster.
func TestDeepOpsTemplate(t *testing.T) {
	t.Parallel()
	data := readFixture(t, deepopsInventory)
	_, err := Convert(Input{Name: deepopsInventory, Data: data,
		GroupVars: []VarsFile{{Target: "k8s_cluster", Name: deepopsGroupVars, Data: readFixture(t, deepopsGroupVars)}}})
	if !errors.Is(err, ErrNoHosts) {
		t.Fatalf("err = %v, want ErrNoHosts", err)
	}
	if !strings.Contains(err.Error(), "no hosts: every host line is commented out") {
		t.Errorf("err = %v", err)
	}
	goldenFile(t, "deepops-26.07.template", []byte(err.Error()+"\n"))
}

// TestDeepOpsUncommented converts the DeepOps template with its host lines
// (and, in the second case, its connection variables) uncommented. The
// result must load through gpukit's loader with no error: DeepOps puts the
// mgmt hosts in kube_control_plane, so a control plane exists.
func TestDeepOpsUncommented(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		golden string
		vars   bool
	}{
		{"deepops-26.07.hosts", false},
		{"deepops-26.07.hosts-and-vars", true},
	} {
		t.Run(tt.golden, func(t *testing.T) {
			t.Parallel()
			data := uncomment(readFixture(t, deepopsInventory), tt.vars)
			res, err := Convert(Input{Name: deepopsInventory, Data: data, ClusterName: "deepops",
				GroupVars: []VarsFile{{Target: "k8s_cluster", Name: deepopsGroupVars, Data: readFixture(t, deepopsGroupVars)}}})
			if err != nil {
				t.Fatal(err)
			}
			out := Render(res)
			goldenFile(t, tt.golden, out)
			inv := mustLoad(t, out)
			var names []string
			for _, m := range inv.Machines {
				names = append(names, fmt.Sprintf("%s=%s%v", m.Name, m.Address, m.Roles))
			}
			want := []string{"mgmt01=10.0.0.1[control-plane]", "mgmt02=10.0.0.2[control-plane]", "mgmt03=10.0.0.3[control-plane]",
				"gpu01=10.0.2.1[worker]", "gpu02=10.0.2.2[worker]"}
			if !equalStrings(names, want) {
				t.Errorf("machines = %q, want %q", names, want)
			}
			requireNotes(t, res, "host login01: not converted: in Slurm groups", "group etcd: gpukit runs etcd stacked")
			if !res.Valid {
				t.Error("Result.Valid is false for an inventory that loads")
			}
			if tt.vars {
				m := inv.Machines[0]
				if m.Access.User != "ubuntu" || m.Access.KeyFile != "~/.ssh/id_rsa" || m.Access.Bastion == nil || m.Access.Bastion.Address != "10.0.0.1" {
					t.Errorf("ssh = %+v", m.Access)
				}
			}
		})
	}
}

// kubespray200 writes a Kubespray-style inventory for 3 control planes and
// 197 GPU workers, using Ansible's own range syntax.
func kubespray200() string {
	return `# 200-node GPU cluster (generated for the test)
[kube_control_plane]
cp[1:3].dc1.example.com

[etcd:children]
kube_control_plane

[kube_node]
gpu[001:197].dc1.example.com

[k8s_cluster:children]
kube_control_plane
kube_node

[all:vars]
ansible_user=ubuntu
ansible_become=true
ansible_ssh_private_key_file=~/.ssh/id_ed25519

[k8s_cluster:vars]
kube_version=1.35.1
kube_network_plugin=calico
kube_pods_subnet=10.233.64.0/18
kube_service_addresses=10.233.0.0/18
`
}

// TestKubespray200 checks that 200 hosts become a few ranged entries that
// gpukit expands back to exactly 200 machines.
func TestKubespray200(t *testing.T) {
	t.Parallel()
	res := mustConvert(t, Input{Name: "kubespray-200.ini", Data: []byte(kubespray200()), ClusterName: "dc1"})
	want := []string{"cp[1:3] cp[1:3].dc1.example.com control-plane", "gpu[001:197] gpu[001:197].dc1.example.com worker"}
	if got := hostLines(res.Cluster); !equalStrings(got, want) {
		t.Errorf("hosts = %q, want %q", got, want)
	}
	out := Render(res)
	goldenFile(t, "kubespray-200", out)
	inv := mustLoad(t, out)
	if n := len(inv.Machines); n != 200 {
		t.Fatalf("%d machines, want 200", n)
	}
	if m := inv.Machines[199]; m.Name != "gpu197" || m.Address != "gpu197.dc1.example.com" || !m.HasRole(inventory.RoleWorker) {
		t.Errorf("last machine = %+v", m)
	}
	if n := strings.Count(string(out), "\n"); n > 60 {
		t.Errorf("rendered inventory is %d lines; a 200-host cluster should stay short", n)
	}
}

// TestKubesprayBuilder200 is the other common shape: one line per host with
// ansible_host (Kubespray's inventory builder), groups by range.
func TestKubesprayBuilder200(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("[all]\n")
	for i := 1; i <= 200; i++ {
		fmt.Fprintf(&b, "node%d ansible_host=10.10.%d.%d ip=10.10.%d.%d\n", i, i/100, i%100+1, i/100, i%100+1)
	}
	b.WriteString("[kube_control_plane]\nnode[1:3]\n[kube_node]\nnode[4:200]\n[etcd:children]\nkube_control_plane\n[all:vars]\nansible_user=ubuntu\n")
	res := mustConvert(t, Input{Data: []byte(b.String()), ClusterName: "c"})
	inv := mustLoad(t, Render(res))
	if n := len(inv.Machines); n != 200 {
		t.Fatalf("%d machines, want 200", n)
	}
	// Addresses wrap at .100, so the run breaks there: a handful of entries.
	if n := len(res.Cluster.Spec.Hosts); n > 6 {
		t.Errorf("%d host entries; want a handful:\n%s", n, Render(res))
	}
	requireNotes(t, res, "variable ip: set on 200 host(s) (node1, node2, node3, node4, node5 and 195 more)")
}
