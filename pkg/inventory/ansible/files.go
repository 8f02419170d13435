package ansible

import (
	"errors"
	"os"
	"path/filepath"
	"sort"
)

// ReadFiles reads the Ansible inventory at file into an Input, with its
// variable files as Ansible finds them: the group_vars/ and host_vars/
// directories beside it, then the extra files of each kind named on the
// command line (GROUP=FILE, or a path such as GROUP.yml whose name is the
// target). Later files override earlier ones, as in Ansible. The caller sets
// the Input's Format and ClusterName.
func ReadFiles(file string, groupVars, hostVars []string) (Input, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return Input{}, err
	}
	in := Input{Name: file, Data: data}
	dir := filepath.Dir(file)
	if in.GroupVars, err = varsFiles(filepath.Join(dir, "group_vars"), groupVars); err != nil {
		return Input{}, err
	}
	if in.HostVars, err = varsFiles(filepath.Join(dir, "host_vars"), hostVars); err != nil {
		return Input{}, err
	}
	return in, nil
}

// varsFiles reads the Ansible vars directory (if present) and the files named
// on the command line; later files override earlier ones, as in Ansible.
func varsFiles(dir string, extra []string) ([]VarsFile, error) {
	var out []VarsFile
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if !e.IsDir() {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	for _, n := range names {
		switch filepath.Ext(n) {
		case ".yml", ".yaml", ".json":
		default:
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			return nil, err
		}
		out = append(out, VarsFile{Name: filepath.Join(dir, n), Data: b})
	}
	for _, spec := range extra {
		target, path := "", spec
		if t, p, ok := cutTarget(spec); ok {
			target, path = t, p
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		out = append(out, VarsFile{Target: target, Name: path, Data: b})
	}
	return out, nil
}

// cutTarget splits "GROUP=FILE"; a plain path has no '=' before its first '/'.
func cutTarget(s string) (string, string, bool) {
	for i, c := range s {
		switch c {
		case '=':
			return s[:i], s[i+1:], i > 0
		case '/':
			return "", s, false
		}
	}
	return "", s, false
}
