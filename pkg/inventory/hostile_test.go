package inventory

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Huge values are echoed capped, with their size; no message grows with the
// input.
func TestLongValuesAreCapped(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 100<<10)
	doc := fmt.Sprintf(`apiVersion: gpukit.dev/v1alpha1
kind: Cluster
metadata: {name: lab}
spec:
  ssh: {user: "%[1]s"}
  hosts:
    - name: cp-1
      address: "%[1]s"
      roles: [control-plane]
      labels:
        team: "%[1]s"
        ? "%[1]s"
        : x
      taints: ["%[1]s"]
  versions: {cuda: "%[1]s", kubernetes: "%[1]s"}
  network: {podCIDR: "%[1]s", cni: "%[1]s"}
  addons: {ingress: {domain: "%[1]s"}, storage: {type: "%[1]s"}}
  kubeflow: {version: "%[1]s"}
  mirrors: {nvidia: "%[1]s", registry: "%[1]s"}
`, long)
	_, err := Parse("long.yaml", []byte(doc))
	var verr *ValidationError
	if !errors.As(err, &verr) || len(verr.Issues) < 10 {
		t.Fatalf("got %v", err)
	}
	for _, is := range verr.Issues {
		line := is.String()
		checkPrintable(t, line)
		if strings.Contains(line, "xxxx") && !strings.Contains(line, "... (102400 bytes)") {
			t.Errorf("long value echoed without its size: %.300s", line)
		}
	}
}

// A file over MaxFileSize is refused before it is parsed, quickly, and
// Load does not read more than the limit (a FIFO, /dev/zero).
func TestFileSizeIsCapped(t *testing.T) {
	t.Parallel()
	big := filepath.Join(t.TempDir(), "big.yaml")
	data := []byte("apiVersion: gpukit.dev/v1alpha1\n# " + strings.Repeat("x", MaxFileSize) + "\n")
	if err := os.WriteFile(big, data, 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err := Load(big)
	if err == nil || !strings.Contains(err.Error(), "larger than 4 MiB") || !strings.Contains(err.Error(), big) {
		t.Errorf("got %v", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("refusing a big file took %s", took)
	}
	if _, err := os.Stat("/dev/zero"); err == nil {
		if _, err := Load("/dev/zero"); err == nil || !strings.Contains(err.Error(), "larger than") {
			t.Errorf("/dev/zero: %v", err)
		}
	}
}

// The line at fault in a YAML error: the key whose indentation breaks its
// siblings', the alias that names no anchor, the value holding ": ". Valid
// YAML that only looks unusual (block scalars, flow collections spanning
// lines, continued plain scalars, sequences at their key's indent) must not
// be blamed.
func TestSyntaxErrorLines(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, doc string
		line      int
	}{
		{"key indented deeper", "spec:\n  hosts:\n    - name: a\n      address: b\n       roles: [x]\n    - name: c\n", 5},
		{"key indented less", "spec:\n  hosts:\n    - name: a\n      address: b\n     roles: [x]\n    - name: c\n", 5},
		{"sibling dedent to no block", "spec:\n  ssh:\n    user: a\n   port: 22\n  hosts: []\n", 4},
		{"value then nested key", "spec:\n  ssh:\n    user: a\n      port: 22\n", 4},
		{"list item misaligned", "spec:\n  hosts:\n    - name: a\n   - name: b\n", 4},
		{"after a block scalar", "a: |\n  text\n    more text\n  end\nb:\n  c: 1\n   d: 2\n", 7},
		{"after a flow list", "a: [1,\n      2,\n  3]\nb:\n  c: 1\n    d: 2\n", 6},
		{"after a continued scalar", "a: one\n  two\nb:\n  c: 1\n   d: 2\n", 5},
		{"sequence at its key's indent", "spec:\n  hosts:\n  - name: a\n    address: b\n   roles: [x]\n", 5},
		{"unknown anchor", "apiVersion: gpukit.dev/v1alpha1\nspec:\n  hosts: *nope\n", 3},
		{"nested mapping value", "apiVersion: gpukit.dev/v1alpha1\nmetadata:\n  name: a: b\n", 3},
	} {
		_, err := Parse("s.yaml", []byte(tc.doc))
		var verr *ValidationError
		if !errors.As(err, &verr) || len(verr.Issues) != 1 {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if got := verr.Issues[0].Pos.Line; got != tc.line || !strings.Contains(verr.Issues[0].Message, "invalid YAML") {
			t.Errorf("%s: %s; want line %d", tc.name, verr.Issues[0], tc.line)
		}
	}
}

// The indentation scan never blames valid YAML.
func TestIndentBreakIgnoresValidYAML(t *testing.T) {
	t.Parallel()
	for _, doc := range []string{
		string(Example()),
		inventory200,
		"a:\n  - b: 1\n    c: 2\n  - - x\n    - y\nd: >\n  folded\n    deeper\ne: {f: 1,\n  g: 2}\n",
		"a: &x\n  b: 1\nc: *x\nd: !!str\n  text\n",
	} {
		if l, c := indentBreak(strings.Split(doc, "\n"), 0); l != 0 {
			t.Errorf("valid YAML blamed at %d:%d:\n%s", l, c, doc)
		}
	}
}
