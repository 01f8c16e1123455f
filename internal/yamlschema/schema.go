// Package yamlschema builds the JSON Schemas editors use
// (scenario.schema.json, lab.schema.json, script.schema.json) from the Go
// types internal/strictyaml decodes, by the same yaml tags, so a key the
// decoder knows is a key the schema knows. The packages' tests generate
// them (go generate) and check that the files in the tree are current.
package yamlschema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"unicode"

	"github.com/agentoslab/agentlab/internal/strictyaml"
	"github.com/google/jsonschema-go/jsonschema"
)

// jsonschema.For is not used: it reads json tags, makes
// every field without omitempty required and refuses recursive types
// (conditions nest); the schema is built here into jsonschema-go's Schema
// type instead, and the packages' tests validate documents with it.

// SchemaOptions say what the Go types alone do not.
type SchemaOptions struct {
	// ID, Title and Description head the document.
	ID, Title, Description string
	// Types are the schemas of types with YAML forms of their own (those
	// of strictyaml.Options.Types), used as given.
	Types map[reflect.Type]*jsonschema.Schema
	// Docs describe types ("Step") and fields ("Step.Background", by Go
	// field name), as DocsFromSource reads them from the doc comments.
	Docs map[string]string
	// Fields amend the schema of a field, by "Type.key" (yaml key): an
	// enum, a pattern, bounds.
	Fields map[string]func(*jsonschema.Schema)
	// Structs amend a struct type's schema once its properties are set:
	// the rules between fields (exactly one of …).
	Structs map[reflect.Type]func(*jsonschema.Schema)
	// Build computes the schema of a type from others (a shorthand
	// form, a table of variants), in the same document.
	Build map[reflect.Type]func(g *SchemaGen) *jsonschema.Schema
	// OneAsList mirrors strictyaml.Options.OneAsList: a list of strings
	// may be one string.
	OneAsList bool
}

// Schema returns the JSON Schema (draft 2020-12) of documents decoded into
// root, a struct type; every other struct type is one of its $defs.
func Schema(root reflect.Type, opts SchemaOptions) *jsonschema.Schema {
	g := &SchemaGen{opts: opts, defs: map[string]*jsonschema.Schema{}, names: map[reflect.Type]string{}}
	s := g.structSchema(root)
	s.Schema = "https://json-schema.org/draft/2020-12/schema"
	s.ID, s.Title = opts.ID, opts.Title
	if opts.Description != "" {
		s.Description = opts.Description
	}
	if len(g.defs) > 0 {
		s.Defs = g.defs
	}
	return s
}

// MarshalSchema renders a schema as the checked-in files are written:
// indented, ending in a newline.
func MarshalSchema(s *jsonschema.Schema) ([]byte, error) {
	b, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, b, "", "  "); err != nil {
		return nil, err
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

// SchemaGen builds one schema document; Build functions use it for the
// schemas of other types.
type SchemaGen struct {
	opts  SchemaOptions
	defs  map[string]*jsonschema.Schema
	names map[reflect.Type]string
}

// defName is a struct type's name in $defs: its Go name, lower camel.
func defName(t reflect.Type) string {
	n := t.Name()
	if n == "" {
		return "anon"
	}
	r := []rune(n)
	i := 0
	for i < len(r) && unicode.IsUpper(r[i]) {
		i++
	}
	switch {
	case i == 0:
	case i == 1 || i == len(r):
		for j := 0; j < i; j++ {
			r[j] = unicode.ToLower(r[j])
		}
	default:
		// An initialism: "MCPServer" → "mcpServer".
		for j := 0; j < i-1; j++ {
			r[j] = unicode.ToLower(r[j])
		}
	}
	return string(r)
}

// Of is the schema of values of type t ($ref for struct types).
func (g *SchemaGen) Of(t reflect.Type) *jsonschema.Schema { return g.typeSchema(t) }

// Object is struct type t's object schema (not a $ref), amendments
// applied.
func (g *SchemaGen) Object(t reflect.Type) *jsonschema.Schema { return g.structSchema(t) }

func (g *SchemaGen) typeSchema(t reflect.Type) *jsonschema.Schema {
	if s, ok := g.opts.Types[t]; ok {
		return s.CloneSchemas()
	}
	if b, ok := g.opts.Build[t]; ok {
		name, done := g.names[t]
		if !done {
			name = defName(t)
			g.names[t] = name
			g.defs[name] = &jsonschema.Schema{}
			g.defs[name] = b(g)
		}
		return &jsonschema.Schema{Ref: "#/$defs/" + name}
	}
	switch t.Kind() {
	case reflect.Pointer:
		return g.typeSchema(t.Elem())
	case reflect.String:
		return &jsonschema.Schema{Type: "string"}
	case reflect.Bool:
		return &jsonschema.Schema{Type: "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return &jsonschema.Schema{Type: "integer"}
	case reflect.Float32, reflect.Float64:
		return &jsonschema.Schema{Type: "number"}
	case reflect.Interface:
		return &jsonschema.Schema{}
	case reflect.Slice:
		items := g.typeSchema(t.Elem())
		list := &jsonschema.Schema{Type: "array", Items: items}
		if g.opts.OneAsList && t.Elem().Kind() == reflect.String && g.opts.Types[t.Elem()] == nil {
			return &jsonschema.Schema{AnyOf: []*jsonschema.Schema{items.CloneSchemas(), list}}
		}
		return list
	case reflect.Map:
		return &jsonschema.Schema{Type: "object", AdditionalProperties: g.typeSchema(t.Elem())}
	case reflect.Struct:
		name, ok := g.names[t]
		if !ok {
			name = defName(t)
			if _, taken := g.defs[name]; taken {
				name = strings.ToLower(t.PkgPath()[strings.LastIndex(t.PkgPath(), "/")+1:]) + t.Name()
			}
			g.names[t] = name
			g.defs[name] = &jsonschema.Schema{} // placeholder: recursive types refer to it
			g.defs[name] = g.structSchema(t)
		}
		return &jsonschema.Schema{Ref: "#/$defs/" + name}
	}
	panic("strictyaml: no schema for " + t.String())
}

// structSchema is an object with t's yaml keys, in declaration order.
func (g *SchemaGen) structSchema(t reflect.Type) *jsonschema.Schema {
	s := &jsonschema.Schema{Type: "object", AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}},
		Properties: map[string]*jsonschema.Schema{}, Description: g.opts.Docs[t.Name()]}
	for _, f := range strictyaml.Fields(t) {
		key := f.Key
		owner, sf := fieldOwner(t, f.Index)
		ps := g.typeSchema(f.Type)
		if d := g.opts.Docs[owner.Name()+"."+sf.Name]; d != "" && ps.Ref == "" {
			ps.Description = d
		} else if d != "" {
			ps = &jsonschema.Schema{Description: d, AllOf: []*jsonschema.Schema{ps}}
		}
		if amend := g.opts.Fields[owner.Name()+"."+key]; amend != nil {
			amend(ps)
		}
		s.Properties[key] = ps
		s.PropertyOrder = append(s.PropertyOrder, key)
	}
	if amend := g.opts.Structs[t]; amend != nil {
		amend(s)
	}
	return s
}

// fieldOwner is the struct type that declares the field at index (an
// inlined struct's, for its fields), and the field.
func fieldOwner(t reflect.Type, index []int) (reflect.Type, reflect.StructField) {
	for i, x := range index {
		f := t.Field(x)
		if i == len(index)-1 {
			return t, f
		}
		t = f.Type
	}
	panic("strictyaml: empty field index")
}

// DocsFromSource reads the doc comments of the types and struct fields
// declared in the Go files of dir (tests left out): "Type" and
// "Type.Field", each one paragraph.
func DocsFromSource(dir string) (map[string]string, error) {
	fset := token.NewFileSet()
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.ParseComments)
		if err != nil {
			return nil, fmt.Errorf("docs: %w", err)
		}
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.TYPE {
				continue
			}
			for _, spec := range gd.Specs {
				ts := spec.(*ast.TypeSpec)
				cg := ts.Doc
				if cg == nil && len(gd.Specs) == 1 {
					cg = gd.Doc
				}
				if d := paragraph(cg); d != "" {
					out[ts.Name.Name] = d
				}
				st, ok := ts.Type.(*ast.StructType)
				if !ok {
					continue
				}
				for _, fld := range st.Fields.List {
					cg := fld.Doc
					if cg == nil {
						cg = fld.Comment
					}
					d := paragraph(cg)
					if d == "" {
						continue
					}
					for _, n := range fld.Names {
						out[ts.Name.Name+"."+n.Name] = d
					}
				}
			}
		}
	}
	return out, nil
}

// paragraph is a comment as one line of text.
func paragraph(cg *ast.CommentGroup) string {
	if cg == nil {
		return ""
	}
	return strings.Join(strings.Fields(cg.Text()), " ")
}
