package ansible

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// The variable files go with the inventory as Ansible takes them: the
// directories' YAML and JSON files by name, then the extra ones in order,
// each applying to its GROUP= target or to the group its name says.
func TestReadFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(rel, content string) string {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ini := write("hosts.ini", "[kube_node]\ngpu01\n")
	write("group_vars/k8s_cluster.yml", "kube_version: v1.37.2\n")
	write("group_vars/all.json", "{}")
	write("group_vars/README.md", "not variables")
	write("group_vars/old/all.yml", "a directory is not read")
	write("host_vars/gpu01.yaml", "ansible_host: 10.0.1.1\n")
	extra := write("extra/gpu.yml", "nvidia_driver_version: 580\n")
	odd := write("with=sign/all.yml", "cuda_version: 13.0\n")

	in, err := ReadFiles(ini, []string{"k8s_cluster=" + extra, extra, odd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	type file struct{ target, name string }
	var got []file
	for _, f := range in.GroupVars {
		got = append(got, file{f.Target, f.Name})
	}
	want := []file{
		{"", filepath.Join(dir, "group_vars", "all.json")},
		{"", filepath.Join(dir, "group_vars", "k8s_cluster.yml")},
		{"k8s_cluster", extra},
		{"", extra},
		{"", odd}, // '=' after a '/': part of the path
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("group vars\n got %v\nwant %v", got, want)
	}
	if in.Name != ini || string(in.Data) != "[kube_node]\ngpu01\n" || len(in.HostVars) != 1 || in.HostVars[0].Name != filepath.Join(dir, "host_vars", "gpu01.yaml") {
		t.Errorf("input %q %q, host vars %+v", in.Name, in.Data, in.HostVars)
	}

	for _, tc := range []struct {
		name   string
		file   string
		groups []string
	}{
		{"no inventory", filepath.Join(dir, "missing.ini"), nil},
		{"no extra file", ini, []string{"k8s_cluster=" + filepath.Join(dir, "missing.yml")}},
	} {
		if _, err := ReadFiles(tc.file, tc.groups, nil); !os.IsNotExist(err) {
			t.Errorf("%s: %v, want a missing file", tc.name, err)
		}
	}
}
