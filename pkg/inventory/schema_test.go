package inventory

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"
)

func compileSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	raw, err := Schema()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("Schema() is not valid JSON: %v", err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(SchemaID, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(SchemaID)
	if err != nil {
		t.Fatalf("Schema() does not compile: %v", err)
	}
	return s
}

// yamlToJSONValue converts YAML to the value jsonschema validates, the way an
// editor or CI linter would (through JSON).
func yamlToJSONValue(t *testing.T, y []byte) any {
	t.Helper()
	var v any
	if err := yaml.Unmarshal(y, &v); err != nil {
		t.Fatal(err)
	}
	j, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(j))
	if err != nil {
		t.Fatal(err)
	}
	return inst
}

func TestSchemaValidatesExample(t *testing.T) {
	t.Parallel()
	s := compileSchema(t)
	if err := s.Validate(yamlToJSONValue(t, Example())); err != nil {
		t.Fatalf("example fails the schema: %v", err)
	}
	for _, f := range []string{"testdata/valid/full.yaml", "testdata/valid/dual-stack.yaml"} {
		data := mustRead(t, f)
		if err := s.Validate(yamlToJSONValue(t, data)); err != nil {
			t.Errorf("%s fails the schema: %v", f, err)
		}
	}
}

func TestSchemaRejects(t *testing.T) {
	t.Parallel()
	s := compileSchema(t)
	tests := map[string]string{
		"unknown top field":  "",
		"unknown ssh field":  "  ssh: {prot: 22}\n",
		"unknown host field": "",
		"bad port":           "  ssh: {port: 70000}\n",
		"bad orchestrator":   "  orchestrator: nomad\n",
		"bad role":           "",
	}
	for name, extra := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			doc := strings.Replace(minimal(""), "spec:\n", "spec:\n"+extra, 1)
			switch name {
			case "unknown top field":
				doc += "extra: 1\n"
			case "unknown host field":
				doc += "      gpus: 8\n"
			case "bad role":
				doc = strings.Replace(doc, "[control-plane]", "[boss]", 1)
			}
			if err := s.Validate(yamlToJSONValue(t, []byte(doc))); err == nil {
				t.Errorf("schema accepted:\n%s", doc)
			}
			if _, err := Parse("x.yaml", []byte(doc)); err == nil {
				t.Errorf("Parse accepted what the schema rejects:\n%s", doc)
			}
		})
	}
}

func TestSchemaShape(t *testing.T) {
	t.Parallel()
	raw, err := Schema()
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Schema string                     `json:"$schema"`
		ID     string                     `json:"$id"`
		Defs   map[string]json.RawMessage `json:"$defs"`
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	if s.Schema != "https://json-schema.org/draft/2020-12/schema" || s.ID != SchemaID {
		t.Errorf("$schema = %q, $id = %q", s.Schema, s.ID)
	}
	for name, def := range s.Defs {
		var d struct {
			Type                 string          `json:"type"`
			Description          string          `json:"description"`
			AdditionalProperties json.RawMessage `json:"additionalProperties"`
		}
		if err := json.Unmarshal(def, &d); err != nil {
			t.Fatal(err)
		}
		if d.Type == "object" && string(d.AdditionalProperties) != "false" {
			t.Errorf("%s allows additional properties", name)
		}
		if d.Description == "" {
			t.Errorf("%s has no description (doc comment)", name)
		}
	}
	if !strings.Contains(string(raw), "KeyFile is a private key") {
		t.Error("field doc comments are missing from the schema")
	}
}
