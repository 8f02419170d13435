package inventory

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/gpukit/gpukit/pkg/safetext"
	"go.yaml.in/yaml/v3"
)

// maxAliasNodes bounds the nodes visited through YAML aliases: a "billion
// laughs" document (aliases of aliases) would otherwise expand exponentially.
// Real inventories use host ranges, not aliases, for repetition.
const maxAliasNodes = 100_000

// Short YAML tags the decoder distinguishes.
const (
	tagStr       = "!!str"
	tagInt       = "!!int"
	tagFloat     = "!!float"
	tagBool      = "!!bool"
	tagNull      = "!!null"
	tagTimestamp = "!!timestamp"
	tagMerge     = "!!merge"
)

// positions records where each field path is written, so that semantic
// checks, which work on plain Go values, can still point at file:line:col.
// A path that is absent was not written (it holds a default or nothing).
type positions struct {
	value map[string]Position // where the value of a path starts
	key   map[string]Position // where the key of a mapping entry is
}

// decoder walks a yaml.v3 node tree into the types of types.go by reflection
// over their yaml tags. Unlike yaml.Unmarshal it never stops at the first
// problem: every unknown field, wrong type, duplicate key and missing required
// field becomes an Issue with its position and field path.
type decoder struct {
	file   string
	issues []Issue
	pos    positions
	// failed holds the paths whose value could not be decoded (or is missing);
	// semantic checks skip them and their children so one mistake is reported
	// once, not again as "invalid" by every rule that reads the zero value.
	failed map[string]bool

	aliasDepth int
	aliasNodes int
	aborted    bool

	fields map[reflect.Type][]structField // per-decode cache, not global state
}

// structField is one yaml-tagged field of a struct type.
type structField struct {
	name     string
	index    int
	required bool // no omitempty: the format requires it
}

func newDecoder(file string) *decoder {
	return &decoder{
		file:   file,
		pos:    positions{value: map[string]Position{}, key: map[string]Position{}},
		failed: map[string]bool{},
		fields: map[reflect.Type][]structField{},
	}
}

func (d *decoder) at(n *yaml.Node) Position {
	return Position{File: d.file, Line: n.Line, Column: n.Column}
}

func (d *decoder) errorf(n *yaml.Node, path, format string, args ...any) {
	d.issues = append(d.issues, Issue{Pos: d.at(n), Path: path, Message: fmt.Sprintf(format, args...)})
	d.failed[path] = true
}

// decode stores n into v (addressable), reporting problems under path.
func (d *decoder) decode(n *yaml.Node, v reflect.Value, path string) {
	if d.aborted {
		return
	}
	if d.aliasDepth > 0 {
		d.aliasNodes++
		if d.aliasNodes > maxAliasNodes {
			d.aborted = true
			d.errorf(n, path, "YAML aliases expand to more than %d nodes; write the values out or use host ranges", maxAliasNodes)
			return
		}
	}
	if _, seen := d.pos.value[path]; !seen && !isNull(n) {
		d.pos.value[path] = d.at(n)
	}
	if n.Kind == yaml.AliasNode {
		target := n.Alias
		if target == nil || target.Kind == yaml.AliasNode {
			d.errorf(n, path, "alias *%s does not name a value", safetext.Name(n.Value))
			return
		}
		d.aliasDepth++
		d.decode(target, v, path)
		d.aliasDepth--
		return
	}
	if isNull(n) {
		return // unset: the zero value, defaults come later
	}

	switch v.Kind() {
	case reflect.Pointer:
		e := reflect.New(v.Type().Elem())
		d.decode(n, e.Elem(), path)
		v.Set(e)
	case reflect.Struct:
		d.decodeStruct(n, v, path)
	case reflect.Slice:
		d.decodeSlice(n, v, path)
	case reflect.Map:
		d.decodeMap(n, v, path)
	case reflect.Interface:
		d.decodeAny(n, v, path)
	case reflect.String:
		d.decodeString(n, v, path)
	case reflect.Int:
		d.decodeInt(n, v, path)
	case reflect.Bool:
		d.decodeBool(n, v, path)
	default:
		// Only reachable if types.go grows a field kind this decoder lacks
		// (testdata/valid/full.yaml sets every kind there is): a bug.
		d.errorf(n, path, "internal error: cannot decode into %s", v.Type())
	}
}

func (d *decoder) decodeStruct(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.MappingNode {
		d.typeError(n, path, "a mapping")
		return
	}
	fields := d.fieldsOf(v.Type())
	seen := map[string]*yaml.Node{}
	present := map[string]bool{}
	merged := false
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		name, ok := d.keyText(k, path)
		if !ok {
			continue
		}
		fpath := joinField(path, name)
		if name == "<<" && resolve(k).ShortTag() == tagMerge {
			d.errorf(k, path, "YAML merge keys (<<) are not supported; write the fields out (spec.ssh already applies to every host)")
			merged = true // its fields are unknown: do not also call them missing
			continue
		}
		if first, dup := seen[name]; dup {
			d.errorf(k, fpath, "duplicate key %s (first at line %d)", q(name), first.Line)
			continue
		}
		seen[name] = k
		f, ok := findField(fields, name)
		if !ok {
			d.errorf(k, fpath, "%s", unknownFieldMessage(name, fields))
			continue
		}
		d.pos.key[fpath] = d.at(k)
		if emptyString(val) && isString(v.Field(f.index)) {
			// Written, but as "": a half-edited value, never a choice.
			// Treating it as unset would silently default it (or drop a
			// host); treating it as a value would skip every check.
			present[name] = true
			if f.required {
				d.errorf(val, fpath, "required field is empty")
			} else {
				d.errorf(val, fpath, "empty value; give a value, or remove the field%s", defaultHint(fpath))
			}
			continue
		}
		d.decode(val, v.Field(f.index), fpath)
		if !isNull(resolve(val)) {
			present[name] = true
		}
	}
	for _, f := range fields {
		if merged || !f.required || present[f.name] {
			continue
		}
		fpath := joinField(path, f.name)
		if k, ok := seen[f.name]; ok {
			d.errorf(k, fpath, "required field is empty")
		} else {
			d.errorf(n, fpath, "missing required field %q", f.name)
		}
	}
}

func (d *decoder) decodeSlice(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.SequenceNode {
		if n.Kind == yaml.ScalarNode {
			d.typeError(n, path, fmt.Sprintf("a list (write [%s])", safetext.Name(n.Value)))
		} else {
			d.typeError(n, path, "a list")
		}
		return
	}
	s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
	for i, c := range n.Content {
		epath := fmt.Sprintf("%s[%d]", path, i)
		if isNull(resolve(c)) {
			// "- " with nothing after it: almost always a half-deleted
			// entry, which must not vanish silently.
			d.errorf(c, epath, "empty list entry")
			continue
		}
		d.decode(c, s.Index(i), epath)
	}
	v.Set(s)
}

func (d *decoder) decodeMap(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.MappingNode {
		d.typeError(n, path, "a mapping of names to values")
		return
	}
	t := v.Type()
	m := reflect.MakeMapWithSize(t, len(n.Content)/2)
	seen := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		name, ok := d.keyText(k, path)
		if !ok {
			continue
		}
		kpath := joinKey(path, name)
		if first, dup := seen[name]; dup {
			d.errorf(k, kpath, "duplicate key %s (first at line %d)", q(name), first.Line)
			continue
		}
		seen[name] = k
		d.pos.key[kpath] = d.at(k)
		elem := reflect.New(t.Elem()).Elem()
		d.decode(val, elem, kpath)
		m.SetMapIndex(reflect.ValueOf(name).Convert(t.Key()), elem)
	}
	v.Set(m)
}

// decodeAny stores free-form YAML (Helm values) as a values file gives
// it to Helm: mappings with string keys, lists, and scalars as YAML types
// them, except timestamps, which stay text (Helm's values are JSON's
// types). Aliases count against the same budget as elsewhere.
func (d *decoder) decodeAny(n *yaml.Node, v reflect.Value, path string) {
	switch n.Kind {
	case yaml.MappingNode:
		m := reflect.New(reflect.TypeFor[map[string]any]()).Elem()
		d.decodeMap(n, m, path)
		v.Set(m)
	case yaml.SequenceNode:
		l := reflect.New(reflect.TypeFor[[]any]()).Elem()
		d.decodeSlice(n, l, path)
		v.Set(l)
	default:
		if n.ShortTag() == tagTimestamp {
			v.Set(reflect.ValueOf(n.Value))
			return
		}
		var x any
		if err := n.Decode(&x); err != nil {
			d.errorf(n, path, "%v", err)
			return
		}
		v.Set(reflect.ValueOf(x))
	}
}

func (d *decoder) decodeString(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.ScalarNode {
		d.typeError(n, path, "a string")
		return
	}
	switch n.ShortTag() {
	case tagStr, tagInt, tagFloat, tagTimestamp:
		// Versions are naturally written unquoted (cuda: 13.0, nvidiaDriver:
		// 580); the literal text is kept, so 13.10 stays "13.10".
		v.SetString(n.Value)
	case tagBool:
		d.typeError(n, path, fmt.Sprintf("a string (quote it: %s)", q(n.Value)))
	default:
		d.typeError(n, path, "a string")
	}
}

func (d *decoder) decodeInt(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.ScalarNode || n.ShortTag() != tagInt {
		d.typeError(n, path, "an integer")
		return
	}
	var i int64
	if err := n.Decode(&i); err != nil || v.OverflowInt(i) {
		d.errorf(n, path, "integer %s is out of range", safetext.Name(n.Value))
		return
	}
	v.SetInt(i)
}

func (d *decoder) decodeBool(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.ScalarNode || n.ShortTag() != tagBool {
		d.typeError(n, path, "a boolean (true or false)")
		return
	}
	var b bool
	if err := n.Decode(&b); err != nil {
		d.typeError(n, path, "a boolean (true or false)")
		return
	}
	v.SetBool(b)
}

// keyText returns a mapping key as text; keys must be plain scalars.
func (d *decoder) keyText(k *yaml.Node, path string) (string, bool) {
	r := resolve(k)
	if r.Kind != yaml.ScalarNode {
		d.errorf(k, path, "mapping keys must be strings, got %s", describe(r))
		return "", false
	}
	switch r.ShortTag() {
	case tagStr, tagInt, tagFloat, tagMerge, tagTimestamp:
		return r.Value, true
	default:
		d.errorf(k, path, "mapping keys must be strings, got %s (quote it)", describe(r))
		return "", false
	}
}

func (d *decoder) typeError(n *yaml.Node, path, want string) {
	d.errorf(n, path, "expected %s, got %s", want, describe(n))
}

// fieldsOf lists the yaml-tagged fields of struct type t.
func (d *decoder) fieldsOf(t reflect.Type) []structField {
	if fs, ok := d.fields[t]; ok {
		return fs
	}
	var fs []structField
	for i := range t.NumField() {
		sf := t.Field(i)
		tag := sf.Tag.Get("yaml")
		if !sf.IsExported() || tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "" {
			name = strings.ToLower(sf.Name[:1]) + sf.Name[1:]
		}
		fs = append(fs, structField{name: name, index: i, required: !strings.Contains(opts, "omitempty")})
	}
	d.fields[t] = fs
	return fs
}

func findField(fs []structField, name string) (structField, bool) {
	for _, f := range fs {
		if f.name == name {
			return f, true
		}
	}
	return structField{}, false
}

// unknownFieldMessage suggests the field the author most likely meant: a
// different capitalisation (podCidr) or a typo (prot), else lists them all.
func unknownFieldMessage(name string, fs []structField) string {
	best, bestDist := "", 3
	names := make([]string, len(fs))
	for i, f := range fs {
		names[i] = f.name
		if strings.EqualFold(f.name, name) {
			best, bestDist = f.name, 0
			continue
		}
		if dist := editDistance(strings.ToLower(name), strings.ToLower(f.name)); dist < bestDist && dist < len(f.name)/2+1 {
			best, bestDist = f.name, dist
		}
	}
	if best != "" {
		return fmt.Sprintf("unknown field %s (did you mean %q?)", q(name), best)
	}
	return fmt.Sprintf("unknown field %s; expected one of: %s", q(name), strings.Join(names, ", "))
}

// editDistance is the Levenshtein distance, for field-name suggestions only.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	if len(ra) > 64 || len(rb) > 64 {
		return 64 // no sensible suggestion, and no quadratic work on long keys
	}
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

// emptyString reports whether n is the string "" (quoted, or an empty
// block scalar); a bare "key:" is null, not empty.
func emptyString(n *yaml.Node) bool {
	r := resolve(n)
	return r.Kind == yaml.ScalarNode && r.ShortTag() == tagStr && r.Value == ""
}

// isString reports whether v holds a string (directly or through a pointer).
func isString(v reflect.Value) bool {
	t := v.Type()
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Kind() == reflect.String
}

// defaultHint names the default a removed field would get, where there is
// one.
func defaultHint(path string) string {
	for _, d := range Defaults() {
		if d.Path == path {
			return " to get the default (" + d.Value + ")"
		}
	}
	return ""
}

// resolve follows an alias to the value it names.
func resolve(n *yaml.Node) *yaml.Node {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		return n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == tagNull
}

// describe names what a node holds, for "expected X, got Y" messages.
func describe(n *yaml.Node) string {
	n = resolve(n)
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch tag := n.ShortTag(); tag {
		case tagStr:
			return "string " + q(n.Value)
		case tagInt:
			return "integer " + safetext.Name(n.Value)
		case tagFloat:
			return "number " + safetext.Name(n.Value)
		case tagBool:
			return "boolean " + safetext.Name(n.Value)
		case tagNull:
			return "null"
		default:
			return "a value tagged " + q(tag)
		}
	}
	return "an unsupported YAML node"
}

// q quotes a value from the file for a message: escaped, one line, cut
// after safetext.MaxEcho characters. Every value a message echoes passes
// through it (or safetext.Name, for values that are nearly always plain).
func q(s string) string { return safetext.Quote(s) }

// joinField appends a struct field to a path: spec.hosts[2].ssh + port.
func joinField(path, name string) string {
	if !isPlainKey(name) {
		return joinKey(path, name)
	}
	if path == "" {
		return name
	}
	return path + "." + name
}

// joinKey appends a map key, quoted because label keys hold dots and slashes:
// spec.hosts[0].labels["nvidia.com/gpu.product"].
func joinKey(path, key string) string {
	return path + "[" + q(key) + "]"
}

func isPlainKey(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !(r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}
