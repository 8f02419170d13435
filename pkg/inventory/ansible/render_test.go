package ansible

import (
	"bytes"
	"strings"
	"testing"
)

func TestRenderIsStableAndOrdered(t *testing.T) {
	t.Parallel()
	ini := "[kube_control_plane]\ncp ansible_host=10.0.0.1 node_labels=\"{'z': '1', 'a': '2', 'm': '3'}\"\n[kube_node]\nw[1:3] ansible_user=ubuntu\n[slurm-node]\nw1\n[all:vars]\nfoo=1\n"
	first := Render(mustConvert(t, Input{Data: []byte(ini), ClusterName: "c"}))
	for range 5 {
		if again := Render(mustConvert(t, Input{Data: []byte(ini), ClusterName: "c"})); !bytes.Equal(first, again) {
			t.Fatalf("render is not stable:\n%s\n---\n%s", first, again)
		}
	}
	body := string(first[bytes.Index(first, []byte("\napiVersion:"))+1:])
	order := []string{"apiVersion:", "kind:", "metadata:", "  name: c", "spec:", "  orchestrator:", "  hosts:", "      labels:", "        a: \"2\"", "        m: \"3\"", "        z: \"1\""}
	at := 0
	for _, key := range order {
		i := strings.Index(body[at:], key)
		if i < 0 {
			t.Fatalf("%q missing or out of order in:\n%s", key, body)
		}
		at += i
	}
	mustLoad(t, first)
}

func TestRenderHeaderListsEveryNote(t *testing.T) {
	t.Parallel()
	res := mustConvert(t, Input{Data: []byte("[kube_node]\nw ansible_host=10.0.1.1\nx ansible_host=10.0.1.2\n[slurm-master]\nlogin\n"),
		GroupVars: []VarsFile{{Name: "k8s.yml", Target: "all", Data: []byte("a: 1\n")}}})
	out := string(Render(res))
	header, _, _ := strings.Cut(out, "\napiVersion:")
	if !strings.HasPrefix(header, "# gpukit inventory converted from inventory.ini (with k8s.yml).\n") {
		t.Errorf("header starts:\n%s", header)
	}
	if len(res.Notes) < 4 {
		t.Fatalf("expected several notes, got %d", len(res.Notes))
	}
	for _, n := range res.Notes {
		if !strings.Contains(header, "#   - "+n.String()+"\n") {
			t.Errorf("note %q missing from the header:\n%s", n, header)
		}
	}
	for _, line := range strings.Split(strings.TrimSpace(header), "\n") {
		if !strings.HasPrefix(line, "#") {
			t.Errorf("header line %q is not a comment", line)
		}
	}
	// Notes about the whole cluster first, then by file and line.
	if res.Notes[0].File != "" {
		t.Errorf("first note %q should be about the cluster", res.Notes[0])
	}
	for i := 1; i < len(res.Notes); i++ {
		a, b := res.Notes[i-1], res.Notes[i]
		if a.File == b.File && a.Line > b.Line {
			t.Errorf("notes out of order: %q before %q", a, b)
		}
	}
}

func TestRenderWithoutNotes(t *testing.T) {
	t.Parallel()
	res := mustConvert(t, Input{Data: []byte("[kube_control_plane]\ncp ansible_host=10.0.0.1 ansible_user=root\n[kube_node]\nw ansible_host=10.0.1.1 ansible_user=root\n"), ClusterName: "c"})
	if len(res.Notes) != 0 {
		t.Fatalf("notes: %s", notesText(res))
	}
	out := string(Render(res))
	if !strings.Contains(out, "# Every host and variable was converted; nothing needed a note.\n") {
		t.Errorf("output:\n%s", out)
	}
	mustLoad(t, []byte(out))
}

// TestNoteCannotBreakOutOfItsComment: values quoted in notes may hold
// newlines (YAML block scalars); they must not end the comment.
func TestNoteCannotBreakOutOfItsComment(t *testing.T) {
	t.Parallel()
	vars := "kube_version: |\n  1.35.0\n  injected: true\n"
	res := mustConvert(t, Input{Data: []byte("[kube_control_plane]\ncp ansible_host=10.0.0.1\n"), ClusterName: "c",
		GroupVars: []VarsFile{{Name: "all.yml", Target: "all", Data: []byte(vars)}}})
	out := Render(res)
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "  injected") || strings.HasPrefix(line, "injected") {
			t.Fatalf("a note broke out of its comment:\n%s", out)
		}
	}
	mustLoad(t, out)
}

func TestNoteString(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		n    Note
		want string
	}{
		{Note{File: "a.ini", Line: 3, Subject: "host x", Message: "m"}, "a.ini:3: host x: m"},
		{Note{File: "a.ini", Subject: "s", Message: "m"}, "a.ini: s: m"},
		{Note{Subject: "cluster", Message: "m"}, "cluster: m"},
		{Note{Message: "m"}, "m"},
	} {
		if got := tt.n.String(); got != tt.want {
			t.Errorf("%+v.String() = %q, want %q", tt.n, got, tt.want)
		}
	}
}
