package inventory

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// MaxFileSize bounds an inventory file. A 10 000-host inventory written out
// host by host, with labels, is about 2 MB (ranges make it a few lines); the
// limit leaves twice that, and keeps a runaway or hostile file from costing
// seconds and hundreds of MB before a single host is contacted.
const MaxFileSize = 4 << 20

// Overrides replace versions of the file from the command line (gpukit init
// --driver, --cuda, --toolkit). They are validated with the file, as if
// written there; a problem names the flag instead of a line.
type Overrides struct {
	// Flag names the option each value came from, for messages.
	NvidiaDriver, CUDA, ContainerToolkit Override
	// Kubernetes is gpukit upgrade kubernetes' --version.
	Kubernetes Override
}

// Override is one value given on the command line; an empty Value is none.
type Override struct {
	Value string
	Flag  string // "--driver"
}

// Load reads, decodes, expands, defaults and validates the inventory at path.
// On any error it returns a nil Inventory; for problems in the file the error
// is a *ValidationError listing all of them at once.
func Load(path string) (*Inventory, error) { return LoadWith(path, Overrides{}) }

// LoadWith is Load with command-line overrides.
func LoadWith(path string, o Overrides) (*Inventory, error) {
	data, err := readFile(path)
	if err != nil {
		return nil, err
	}
	return ParseWith(path, data, o)
}

// ErrNoFile is ReadFile's and LoadFile's error when no file was named.
var ErrNoFile = errors.New("no inventory: pass -i FILE (gpukit inventory example writes one)")

// ReadFile reads the inventory file at path, for a command that needs its
// bytes as well as the inventory (LoadFile then parses them).
func ReadFile(path string) ([]byte, error) {
	if path == "" {
		return nil, ErrNoFile
	}
	return readFile(path)
}

// LoadFile is how a command loads the inventory it was given: the file at
// path (data, when it read the bytes already), with the command line's
// overrides. A file with problems says how many before listing them
// ("FILE: 2 error(s):", then one line each); errors.As still finds the
// *ValidationError.
func LoadFile(path string, data []byte, o Overrides) (*Inventory, error) {
	if path == "" {
		return nil, ErrNoFile
	}
	if data == nil {
		var err error
		if data, err = readFile(path); err != nil {
			return nil, err
		}
	}
	inv, err := ParseWith(path, data, o)
	var ve *ValidationError
	if errors.As(err, &ve) {
		return nil, fmt.Errorf("%s: %d error(s):\n%w", path, len(ve.Issues), err)
	}
	return inv, err
}

func readFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read inventory: %w", err)
	}
	defer f.Close()
	// One byte over the limit is enough to refuse it; /dev/zero or a FIFO
	// is not read forever.
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("read inventory: %w", err)
	}
	return data, nil
}

// Parse is Load for an inventory already in memory; file names it in
// positions and messages. Secrets are not resolved here: SecretRef.Resolve
// reads them when a connection needs them, so a plan or validate run never
// touches them.
func Parse(file string, data []byte) (*Inventory, error) { return ParseWith(file, data, Overrides{}) }

// ParseWith is Parse with command-line overrides.
func ParseWith(file string, data []byte, o Overrides) (*Inventory, error) {
	if len(data) > MaxFileSize {
		return nil, &ValidationError{File: file, Issues: []Issue{{Pos: Position{File: file}, Message: fmt.Sprintf(
			"the file is larger than %d MiB; an inventory of 10 000 hosts written out host by host is about 2 MB (host ranges such as gpu-[001:200] keep it to a few lines)",
			MaxFileSize>>20)}}}
	}
	if issue := scanText(file, data); issue != nil {
		return nil, &ValidationError{File: file, Issues: []Issue{*issue}}
	}
	root, issue := parseDocument(file, data)
	if issue != nil {
		return nil, &ValidationError{File: file, Issues: []Issue{*issue}}
	}

	d := newDecoder(file)
	var cluster Cluster
	d.decode(root, reflect.ValueOf(&cluster).Elem(), "")

	if d.aborted {
		// The tree was only partly decoded: semantic checks would report
		// noise about the missing part.
		return nil, &ValidationError{File: file, Issues: sortIssues(d.issues)}
	}
	o.apply(&cluster, &d.pos)
	c := newChecker(file, d.pos, d.failed)
	c.errs = append(c.errs, d.issues...)
	machines := c.expandHosts(cluster.Spec.Hosts)
	applyDefaults(&cluster, machines, c.sources)
	c.validate(&cluster, machines)

	errs, warns := sortIssues(c.errs), sortIssues(c.warns)
	if len(errs) > 0 {
		return nil, &ValidationError{File: file, Issues: errs, Warnings: warns}
	}
	return &Inventory{File: file, Cluster: cluster, Machines: machines, Warnings: warns, pos: d.pos}, nil
}

// parseDocument parses data into the root mapping node of its single YAML
// document, or says in one Issue why that is impossible.
func parseDocument(file string, data []byte) (root *yaml.Node, issue *Issue) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	err := safeDecode(dec, &doc)
	if errors.Is(err, io.EOF) {
		return nil, &Issue{Pos: Position{File: file}, Message: "empty inventory; expected a Cluster document (apiVersion, kind, metadata, spec)"}
	}
	if err != nil {
		return nil, syntaxIssue(file, data, err)
	}
	var next yaml.Node
	switch err := safeDecode(dec, &next); {
	case err == nil:
		return nil, &Issue{Pos: Position{File: file, Line: next.Line, Column: next.Column}, Message: "more than one YAML document; an inventory is a single Cluster document (remove the ---)"}
	case !errors.Is(err, io.EOF):
		return nil, syntaxIssue(file, data, err)
	}

	root = &doc
	if root.Kind == yaml.DocumentNode {
		if len(root.Content) == 0 {
			return nil, &Issue{Pos: Position{File: file}, Message: "empty inventory; expected a Cluster document"}
		}
		root = root.Content[0]
	}
	if isNull(root) {
		return nil, &Issue{Pos: Position{File: file, Line: root.Line, Column: root.Column}, Message: "empty inventory; expected a Cluster document (apiVersion, kind, metadata, spec)"}
	}
	if resolve(root).Kind != yaml.MappingNode {
		return nil, &Issue{Pos: Position{File: file, Line: root.Line, Column: root.Column}, Message: "expected a mapping with apiVersion, kind, metadata and spec, got " + describe(root)}
	}
	return root, nil
}

// safeDecode shields Parse from a panic inside the YAML library: the input is
// operator-written and fuzzed, and a crash must become an error.
func safeDecode(dec *yaml.Decoder, n *yaml.Node) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("yaml: %v", r)
		}
	}()
	return dec.Decode(n)
}

func syntaxIssue(file string, data []byte, err error) *Issue {
	// yaml.v3 syntax errors read "yaml: line 3: did not find ..."; the
	// line becomes the position so the output matches every other issue,
	// after locateSyntaxError has looked for the line really at fault.
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 0
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		num, text, found := strings.Cut(rest, ": ")
		if l, err := strconv.Atoi(num); found && err == nil {
			line, msg = l, text
		}
	}
	l, col, indentation := locateSyntaxError(data, msg, line)
	if indentation && l != line && line > 0 {
		msg += fmt.Sprintf(" (the block that starts on line %d)", line)
	}
	if hint := syntaxHint(msg, indentation); hint != "" {
		msg += "; " + hint
	}
	return &Issue{Pos: Position{File: file, Line: l, Column: col}, Message: "invalid YAML: " + msg}
}

// syntaxHint says what most often causes a YAML error.
func syntaxHint(msg string, indentation bool) string {
	switch {
	case indentation:
		return "check the indentation of this line against its siblings"
	case strings.Contains(msg, "mapping values are not allowed"):
		return `a value holding ": " must be quoted`
	case strings.HasPrefix(msg, "unknown anchor"):
		return "define the anchor (&name) before its alias (*name)"
	}
	return ""
}

// apply writes the overrides into the decoded cluster and records them as
// written at their flag, so that validation checks them and names the flag.
func (o Overrides) apply(cl *Cluster, pos *positions) {
	for _, f := range []struct {
		o     Override
		field *string
		path  string
	}{
		{o.NvidiaDriver, &cl.Spec.Versions.NvidiaDriver, "spec.versions.nvidiaDriver"},
		{o.CUDA, &cl.Spec.Versions.CUDA, "spec.versions.cuda"},
		{o.ContainerToolkit, &cl.Spec.Versions.ContainerToolkit, "spec.versions.containerToolkit"},
		{o.Kubernetes, &cl.Spec.Versions.Kubernetes, "spec.versions.kubernetes"},
	} {
		if f.o.Value == "" {
			continue
		}
		*f.field = f.o.Value
		pos.value[f.path] = Position{File: f.o.Flag}
	}
}
