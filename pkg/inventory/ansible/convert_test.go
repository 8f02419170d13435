package ansible

import (
	"strings"
	"testing"
)

// Valid says whether gpukit can load the result; a cluster without a control
// plane cannot, and the notes say so.
func TestResultValid(t *testing.T) {
	res, err := Convert(Input{Name: "hosts.ini", Data: []byte("[kube_node]\ngpu01 ansible_host=10.0.1.1\n")})
	if err != nil {
		t.Fatal(err)
	}
	if res.Valid {
		t.Fatal("a cluster without a control plane reported valid")
	}
	requireNotes(t, res, "gpukit validation fails until this is fixed")
}

// said is what Convert told the operator: its error, or its notes.
func said(res *Result, err error) []string {
	if err != nil {
		return []string{err.Error()}
	}
	var out []string
	for _, n := range res.Notes {
		out = append(out, n.String())
	}
	return out
}

// Values from a hostile Ansible inventory (terminal escapes, bidi controls,
// 100 KB values) reach notes and errors escaped, one line, bounded.
func TestHostileValuesAreEscapedInNotes(t *testing.T) {
	long := strings.Repeat("v", 100<<10)
	ini := "[kube_control_plane]\ncp\x1b]0;owned\x07 ansible_host=10.0.0.1 ansible_user=\"u\u202eser\"\n" +
		"[kube_node]\ngpu01 ansible_host=10.0.1.1 weird_var=" + long + "\n[all:vars]\n" + long + "_x=1\n"
	lines := said(Convert(Input{Name: "hosts.ini", Data: []byte(ini)}))
	if len(lines) == 0 {
		t.Fatal("no notes and no error")
	}
	for _, l := range lines {
		if len(l) > maxMessage+200 {
			t.Errorf("note of %d bytes", len(l))
		}
		for _, r := range l {
			if r < ' ' || r == 0x7f || r == '\u202e' {
				t.Errorf("raw %U in %q", r, l)
				break
			}
		}
	}
	// An escape in the file name and in an address: whichever way Convert
	// answers, no raw escape reaches what it says.
	lines = said(Convert(Input{Name: "h\x1b[2J.ini", Data: []byte("[kube_node]\ngpu01 ansible_host=\x1b[31m\n")}))
	if len(lines) == 0 {
		t.Error("an escape as an address: no note and no error")
	}
	for _, l := range lines {
		if strings.ContainsRune(l, 0x1b) {
			t.Errorf("raw escape in %q", l)
		}
	}
}
