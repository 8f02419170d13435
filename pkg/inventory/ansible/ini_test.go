package ansible

import (
	"errors"
	"strings"
	"testing"
)

func TestParseINI(t *testing.T) {
	t.Parallel()
	src := "\ufeff# a comment\n; another\nloose ansible_host=10.9.9.9  # trailing comment\n" +
		"[kube_control_plane]   # comment after a header\n" +
		"cp[1:2] ansible_host=10.0.0.1 ansible_user=\"ubuntu\" note='two words'\n" +
		"cp3:2222\n" +
		"[gpus:children]\nkube_node\n" +
		"[kube_node]\n10.0.1.[1:3]\n" +
		"[gpus:vars]\nansible_ssh_private_key_file='~/.ssh/id_rsa'\nkey = spaced value \n" +
		"[all:vars]\r\nansible_become=True\r\n"
	inv, err := parseINI("inv.ini", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	wantHosts := []string{"loose", "cp1", "cp2", "cp3", "10.0.1.1", "10.0.1.2", "10.0.1.3"}
	if !equalStrings(inv.hostOrder, wantHosts) {
		t.Errorf("hosts = %q, want %q", inv.hostOrder, wantHosts)
	}
	cp1 := inv.hosts["cp1"]
	for k, want := range map[string]string{"ansible_host": "10.0.0.1", "ansible_user": "ubuntu", "note": "two words"} {
		if got := cp1.vars[k].text; got != want {
			t.Errorf("cp1 %s = %q, want %q", k, got, want)
		}
	}
	if v := cp1.vars["ansible_host"]; v.pos.line != 5 || v.pos.file != "inv.ini" {
		t.Errorf("cp1 ansible_host at %+v, want inv.ini:5", v.pos)
	}
	if got := inv.hosts["cp3"].vars["ansible_port"].text; got != "2222" {
		t.Errorf("cp3 port = %q", got)
	}
	if got := inv.hosts["loose"].vars["ansible_host"].text; got != "10.9.9.9" {
		t.Errorf("loose ansible_host = %q (the comment must be dropped)", got)
	}
	g := inv.groups["gpus"]
	if !equalStrings(g.children, []string{"kube_node"}) {
		t.Errorf("gpus children = %q", g.children)
	}
	if got := g.vars["ansible_ssh_private_key_file"].text; got != "~/.ssh/id_rsa" {
		t.Errorf("key file = %q", got)
	}
	if got := g.vars["key"].text; got != "spaced value" {
		t.Errorf("key = %q", got)
	}
	if got := inv.groups["all"].vars["ansible_become"].text; got != "True" {
		t.Errorf("ansible_become = %q", got)
	}
	if err := inv.resolve(); err != nil {
		t.Fatal(err)
	}
	if h := inv.hosts["10.0.1.2"]; !h.groups["gpus"] || !h.groups["kube_node"] || !h.groups["all"] {
		t.Errorf("10.0.1.2 groups = %v", h.groups)
	}
	if !inv.hosts["loose"].groups["ungrouped"] {
		t.Errorf("loose is not ungrouped: %v", inv.hosts["loose"].groups)
	}
}

func TestParseINIErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, src, want string
	}{
		{"unknown section type", "[a]\nh\n[a:hosts]\n", "inv.ini:3: section [a:hosts] has unknown type"},
		{"bad header", "[a b]\n", "inv.ini:1: invalid section header"},
		{"vars without =", "[a:vars]\nx\n", "inv.ini:2: expected key=value in [a:vars]"},
		{"host var without =", "[a]\nh foo\n", "inv.ini:2: expected key=value host variable, got \"foo\""},
		{"unterminated quote", "[a]\n\nh x='oops\n", "inv.ini:3: host line \"h x='oops\": no closing quotation"},
		{"bad range", "[a]\nnode[01:5]\n", "inv.ini:2: host pattern \"node[01:5]\": range [01:5]: begin and end must have the same width"},
		{"trailing colon", "[a]\nh:\n", "inv.ini:2: invalid host pattern \"h:\""},
		{"bad child", "[a:children]\nb c\n", "inv.ini:2: invalid group name \"b c\" in [a:children]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Convert(Input{Name: "inv.ini", Data: []byte(tt.src)})
			var pe *ParseError
			if !errors.As(err, &pe) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want a ParseError containing %q", err, tt.want)
			}
		})
	}
}

func TestGroupCycle(t *testing.T) {
	t.Parallel()
	_, err := Convert(Input{Name: "inv.ini", Data: []byte("[a:children]\nb\n[b:children]\na\n[a]\nh\n")})
	if err == nil || !strings.Contains(err.Error(), "is its own ancestor") {
		t.Fatalf("err = %v", err)
	}
}

func TestNoHosts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, src, want string
	}{
		{"empty", "", "inv.ini: no hosts: the inventory defines no host"},
		{"only groups", "[kube_node]\n[all:vars]\nansible_user=x\n", "inv.ini: no hosts: the inventory defines no host"},
		{"template", "# Inventory\n[kube_control_plane]\n#node1 ansible_host=10.0.0.1\n# node2 ansible_host=10.0.0.2 # ip=1.2.3.4\n# HEADING\n[all:vars]\n#ansible_user=ubuntu\n",
			"inv.ini:3: no hosts: every host line is commented out (2 commented host lines"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Convert(Input{Name: "inv.ini", Data: []byte(tt.src)})
			if !errors.Is(err, ErrNoHosts) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want ErrNoHosts with %q", err, tt.want)
			}
		})
	}
}

func TestIsCommentedHost(t *testing.T) {
	t.Parallel()
	for body, want := range map[string]bool{
		"mgmt01":                              true,
		"gpu01      ansible_host=10.0.2.1":    true,
		" node1 ansible_host=95.54.0.12  # x": true,
		" KUBERNETES":                         false,
		" Odd number of nodes required":       false,
		"#####":                               false,
		" NOTE: Use existing hostnames here":  false,
		"":                                    false,
	} {
		if got := isCommentedHost(body); got != want {
			t.Errorf("isCommentedHost(%q) = %v, want %v", body, got, want)
		}
	}
}

func TestShellSplit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in       string
		comments bool
		want     []string
	}{
		{`a b  c`, false, []string{"a", "b", "c"}},
		{`a="b c" 'd e'`, false, []string{"a=b c", "d e"}},
		{`x='-o ProxyCommand="ssh -W %h:%p -q u@h"'`, false, []string{`x=-o ProxyCommand="ssh -W %h:%p -q u@h"`}},
		{`a\ b "c\"d" "e\f"`, false, []string{"a b", `c"d`, `e\f`}},
		{`'' x`, false, []string{"", "x"}},
		{`h a=1 # comment`, true, []string{"h", "a=1"}},
		{`h pass=abc#def`, true, []string{"h", "pass=abc"}},
		{`h pass='abc#def'`, true, []string{"h", "pass=abc#def"}},
	}
	for _, tt := range tests {
		got, err := shellSplit(tt.in, tt.comments)
		if err != nil || !equalStrings(got, tt.want) {
			t.Errorf("shellSplit(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
	if _, err := shellSplit(`a "b`, false); err == nil {
		t.Error("unterminated quote: no error")
	}
}

func TestPythonLiteral(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		`'~/.ssh/id_rsa'`: "~/.ssh/id_rsa",
		`"a\"b"`:          `a"b`,
		`plain`:           "plain",
		`'a' + 'b'`:       `'a' + 'b'`,
		`"{'a': 1}"`:      `{'a': 1}`,
		`22`:              "22",
	} {
		if got := pythonLiteral(in); got != want {
			t.Errorf("pythonLiteral(%q) = %q, want %q", in, got, want)
		}
	}
}
