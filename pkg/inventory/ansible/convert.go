package ansible

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/safetext"
)

// Format is the syntax of an Ansible inventory file.
type Format int

const (
	// FormatAuto picks the format from the file extension, then the content.
	FormatAuto Format = iota
	// FormatINI is Ansible's INI inventory ([group], [group:children], [group:vars]).
	FormatINI
	// FormatYAML is Ansible's YAML inventory (all: {hosts:, children:, vars:}).
	FormatYAML
)

// ParseFormat reads a format name as given on a command line.
func ParseFormat(s string) (Format, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "auto":
		return FormatAuto, nil
	case "ini":
		return FormatINI, nil
	case "yaml", "yml":
		return FormatYAML, nil
	}
	return FormatAuto, fmt.Errorf("unknown Ansible inventory format %q (want ini, yaml or auto)", s)
}

// Input is one Ansible inventory and the variable files that go with it.
type Input struct {
	// Name is the inventory's file name as the operator gave it; it prefixes
	// notes and errors, and its extension picks the format under FormatAuto.
	Name string
	// Data is the inventory file's content.
	Data   []byte
	Format Format
	// GroupVars are group_vars files (group_vars/k8s_cluster.yml, ...). Ansible
	// lets them override the inventory's own [group:vars].
	GroupVars []VarsFile
	// HostVars are host_vars files (host_vars/gpu01.yml, ...); they override
	// every group variable.
	HostVars []VarsFile
	// ClusterName becomes metadata.name. Ansible inventories carry no cluster
	// name, so when it is empty DefaultClusterName is used and a note says so.
	ClusterName string
}

// VarsFile is one YAML file of Ansible variables for a group or a host.
type VarsFile struct {
	// Target is the group or host the variables apply to. Empty: the file
	// name without directory and extension ("group_vars/k8s_cluster.yml" ->
	// "k8s_cluster"), which is how Ansible itself matches them.
	Target string
	// Name is the file name for notes and errors.
	Name string
	Data []byte
}

// target is the group or host name the file applies to.
func (f VarsFile) target() string {
	if f.Target != "" {
		return f.Target
	}
	base := path.Base(strings.ReplaceAll(f.Name, "\\", "/"))
	for _, ext := range []string{".yml", ".yaml", ".json"} {
		if strings.HasSuffix(base, ext) {
			return strings.TrimSuffix(base, ext)
		}
	}
	return base
}

// DefaultClusterName is metadata.name when Input.ClusterName is empty.
const DefaultClusterName = "gpu-cluster"

// Result is a converted inventory and what the conversion could not carry over.
type Result struct {
	// Cluster is the gpukit inventory document, ready for Render.
	Cluster inventory.Cluster
	// Notes say what was not mapped, or was changed on the way, in source
	// order. An operator should read every one before running gpukit.
	Notes []Note
	// Sources are the file names that were read, inventory first; Render
	// names them in its header.
	Sources []string
	// Valid is true when the converted inventory loads through gpukit's
	// loader without error; when false, the notes say what to fix.
	Valid bool
	// Source is the format the inventory was in: Ansible's, or a KubeKey v4
	// Inventory (recognised by its apiVersion and kind).
	Source Source
}

// Note is one thing the conversion dropped, changed or wants checked.
type Note struct {
	// File is the source file the note is about; empty for the cluster as a whole.
	File string
	// Line is the 1-based source line, 0 when unknown.
	Line int
	// Subject is what the note is about: "host login01", "group etcd",
	// "variable ansible_ssh_common_args", "cluster".
	Subject string
	Message string
}

// String renders the note as "file:line: subject: message".
func (n Note) String() string {
	var b strings.Builder
	if n.File != "" {
		b.WriteString(n.File)
		if n.Line > 0 {
			fmt.Fprintf(&b, ":%d", n.Line)
		}
		b.WriteString(": ")
	}
	if n.Subject != "" {
		b.WriteString(n.Subject)
		b.WriteString(": ")
	}
	b.WriteString(n.Message)
	// Subjects name hosts and groups from the file: escaped like the message.
	return safetext.Escape(b.String())
}

// ErrNoHosts is wrapped by Convert's error when the inventory names no host
// at all (for example a template whose host lines are all commented out).
var ErrNoHosts = errors.New("no hosts")

// ParseError is a syntax error in an inventory or variables file.
type ParseError struct {
	File string
	Line int // 1-based; 0 when the parser could not tell
	Msg  string
}

func (e *ParseError) Error() string {
	file := safetext.Escape(e.File)
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", file, e.Line, oneLine(e.Msg))
	}
	return fmt.Sprintf("%s: %s", file, oneLine(e.Msg))
}

// Convert reads an Ansible inventory and returns the gpukit inventory it
// describes. Syntax errors are *ParseError values naming file:line; an
// inventory with no hosts returns an error wrapping ErrNoHosts. Everything
// else that does not map (Slurm groups, unknown variables, a missing
// control-plane) becomes a Note, not an error, so that one run shows the
// operator the whole picture.
func Convert(in Input) (*Result, error) {
	name := in.Name
	if name == "" {
		name = "inventory"
	}
	inv, err := parseInventory(name, in.Data, in.Format)
	if err != nil {
		return nil, err
	}
	if len(inv.hostOrder) == 0 {
		return nil, noHostsError(inv)
	}
	notes := inv.notes
	sources := []string{name}
	if inv.source == SourceKubeKey {
		// KubeKey reads no group_vars or host_vars: its variables are in the
		// Inventory itself.
		for _, f := range slices.Concat(in.GroupVars, in.HostVars) {
			notes.add(f.Name, 0, "variables file", "not read: the inventory is a KubeKey Inventory, whose variables are all in the file itself (spec.vars, groups' vars, hosts)")
		}
		in.GroupVars, in.HostVars = nil, nil
	}
	for _, f := range in.GroupVars {
		vars, err := parseVarsFile(f.Name, f.Data)
		if err != nil {
			return nil, err
		}
		sources = append(sources, f.Name)
		g := inv.groups[f.target()]
		if g == nil {
			notes.add(f.Name, 0, "group "+f.target(), "the inventory has no such group, so these variables apply to no host")
			continue
		}
		g.vars.overlay(vars)
	}
	for _, f := range in.HostVars {
		vars, err := parseVarsFile(f.Name, f.Data)
		if err != nil {
			return nil, err
		}
		sources = append(sources, f.Name)
		h := inv.hosts[f.target()]
		if h == nil {
			notes.add(f.Name, 0, "host "+f.target(), "the inventory has no such host, so these variables apply to nothing")
			continue
		}
		h.vars.overlay(vars)
	}
	if err := inv.resolve(); err != nil {
		return nil, err
	}

	c := newConverter(inv, &notes)
	cluster := c.convert()
	cluster.Metadata.Name = clusterName(in.ClusterName, inv, &notes)
	valid := c.settle(&cluster, name)
	return &Result{Cluster: cluster, Notes: notes.sorted(sources), Sources: sources, Valid: valid, Source: inv.source}, nil
}

// clusterName is metadata.name: the operator's choice, else the name the
// file gives (KubeKey's metadata.name), else DefaultClusterName with a note.
func clusterName(given string, inv *ansibleInventory, notes *noteList) string {
	if given != "" {
		return given
	}
	n := inv.clusterName
	switch {
	case inv.source != SourceKubeKey:
		notes.add("", 0, "metadata.name", fmt.Sprintf("Ansible inventories have no cluster name; set to %q, change it to name your cluster", DefaultClusterName))
	case n.text == "":
		notes.add("", 0, "metadata.name", fmt.Sprintf("the KubeKey Inventory has no metadata.name; set to %q, change it to name your cluster", DefaultClusterName))
	case n.text == kubekeyTemplateName:
		notes.addf(n.pos, "metadata.name", "%q is the name KubeKey's inventory template ships with, not a cluster's; set to %q, change it to name your cluster", n.text, DefaultClusterName)
	default:
		return n.text
	}
	return DefaultClusterName
}

// noHostsError explains an empty inventory; a template with every host line
// commented out (the DeepOps and Kubespray samples) is the usual cause.
func noHostsError(inv *ansibleInventory) error {
	if inv.commentedHosts > 0 {
		return &noHosts{&ParseError{File: inv.file, Line: inv.firstCommentedHost, Msg: fmt.Sprintf(
			"no hosts: every host line is commented out (%d commented host lines; the file is a template: uncomment and edit them)",
			inv.commentedHosts)}}
	}
	return &noHosts{&ParseError{File: inv.file, Msg: "no hosts: the inventory defines no host"}}
}

// noHosts lets errors.Is(err, ErrNoHosts) hold while the message keeps file:line.
type noHosts struct{ *ParseError }

func (e *noHosts) Is(target error) bool { return target == ErrNoHosts }
func (e *noHosts) Unwrap() error        { return e.ParseError }
