package inventory

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"strings"

	"github.com/invopop/jsonschema"
)

// SchemaID is the $id of the JSON Schema of the v1alpha1 format.
const SchemaID = "https://gpukit.dev/schemas/v1alpha1/cluster.json"

// typesSource is types.go itself: its doc comments become the schema's
// descriptions, so the schema documents exactly what the Go types do without
// a generated copy that could go stale.
//
//go:embed types.go
var typesSource string // a string, so immutable

// Schema returns the JSON Schema (draft 2020-12) of the inventory format,
// for editors and CI linters. Every object refuses unknown fields, like Load.
// It is stricter about types than Load in one way: versions must be quoted
// strings, because a JSON or YAML tool reads cuda: 13.10 as the number 13.1.
func Schema() ([]byte, error) {
	comments, err := typeComments(typesSource)
	if err != nil {
		return nil, fmt.Errorf("schema: read type comments: %w", err)
	}
	pkg := reflect.TypeFor[Cluster]().PkgPath()
	r := &jsonschema.Reflector{
		// Required = fields without omitempty, as in the decoder.
		RequiredFromJSONSchemaTags: false,
		AllowAdditionalProperties:  false,
		// Role is a named string; the schema lists its values (which of
		// them an orchestrator accepts is Load's business).
		Mapper: func(t reflect.Type) *jsonschema.Schema {
			if t == reflect.TypeFor[Values]() {
				// A chart's values: their schema is the chart's.
				return &jsonschema.Schema{Type: "object", Description: comments["Values"]}
			}
			if t != reflect.TypeFor[Role]() {
				return nil
			}
			return &jsonschema.Schema{
				Type:        "string",
				Enum:        []any{string(RoleControlPlane), string(RoleWorker), string(RoleIngress), string(RoleManager)},
				Description: comments["Role"],
			}
		},
		LookupComment: func(t reflect.Type, field string) string {
			if t.PkgPath() != pkg {
				return ""
			}
			key := t.Name()
			if field != "" {
				key += "." + field
			}
			return comments[key]
		},
	}
	s := r.Reflect(&Cluster{})
	s.ID = SchemaID
	s.Title = "gpukit Cluster inventory (" + APIVersion + ")"
	out, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	return out, nil
}

// typeComments maps "Type" and "Type.Field" to their doc comments, joined
// into one line each.
func typeComments(src string) (map[string]string, error) {
	f, err := parser.ParseFile(token.NewFileSet(), "types.go", src, parser.ParseComments)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, decl := range f.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.TYPE {
			continue
		}
		for _, spec := range gd.Specs {
			ts := spec.(*ast.TypeSpec)
			doc := ts.Doc
			if doc == nil && len(gd.Specs) == 1 {
				doc = gd.Doc
			}
			out[ts.Name.Name] = oneLine(doc.Text())
			st, ok := ts.Type.(*ast.StructType)
			if !ok {
				continue
			}
			for _, fld := range st.Fields.List {
				text := fld.Doc.Text()
				if text == "" {
					text = fld.Comment.Text()
				}
				for _, n := range fld.Names {
					if text != "" {
						out[ts.Name.Name+"."+n.Name] = oneLine(text)
					}
				}
			}
		}
	}
	return out, nil
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
