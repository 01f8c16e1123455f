package yamlschema

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type dur int64

type inner struct {
	Name  string `yaml:"name"`
	Count int    `yaml:"count"`
}

type base struct {
	Shared string `yaml:"shared"`
}

// node is recursive, as conditions are.
type node struct {
	// Name names the node.
	Name  string `yaml:"name"`
	Kids  []node `yaml:"kids"`
	Extra *inner `yaml:"extra"`
	Wait  dur    `yaml:"wait"`
	base  `yaml:",inline"`
	Tags  []string `yaml:"tags"`
}

// TestSchema: the schema has the yaml keys of the types (inlined ones
// flattened, recursive ones through $defs), refuses unknown keys, carries
// the docs and amendments, and validates what the decoder accepts.
func TestSchema(t *testing.T) {
	t.Parallel()
	s := Schema(reflect.TypeFor[node](), SchemaOptions{
		Title:     "test",
		OneAsList: true,
		Docs:      map[string]string{"node.Name": "Name names the node.", "inner": "An inner part."},
		Types:     map[reflect.Type]*jsonschema.Schema{reflect.TypeFor[dur](): {Type: "string", Pattern: `^[0-9]+s$`}},
		Fields:    map[string]func(*jsonschema.Schema){"node.name": func(s *jsonschema.Schema) { s.MinLength = new(int); *s.MinLength = 1 }},
		Structs:   map[reflect.Type]func(*jsonschema.Schema){reflect.TypeFor[node](): func(s *jsonschema.Schema) { s.Required = []string{"name"} }},
	})
	b, err := MarshalSchema(s)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	props := m["properties"].(map[string]any)
	assert.ElementsMatch(t, []string{"name", "kids", "extra", "wait", "shared", "tags"}, keysOfMap(props))
	assert.Equal(t, "Name names the node.", props["name"].(map[string]any)["description"])
	assert.Equal(t, false, m["additionalProperties"])
	defs := m["$defs"].(map[string]any)
	assert.Contains(t, defs, "node", "a recursive type is a $def")
	assert.Contains(t, defs, "inner")
	assert.Equal(t, "An inner part.", defs["inner"].(map[string]any)["description"])

	r, err := s.Resolve(nil)
	require.NoError(t, err)
	for doc, ok := range map[string]bool{
		`{"name": "a", "kids": [{"name": "b", "kids": []}], "wait": "5s", "shared": "x", "tags": "one"}`: true,
		`{"name": "a", "tags": ["one", "two"], "extra": {"name": "i", "count": 2}}`:                      true,
		`{"name": ""}`:                           false,
		`{"kids": []}`:                           false,
		`{"name": "a", "nmae": "b"}`:             false,
		`{"name": "a", "kids": [{"nmae": "b"}]}`: false,
		`{"name": "a", "wait": "soon"}`:          false,
		`{"name": "a", "extra": {"count": "x"}}`: false,
	} {
		var v any
		require.NoError(t, json.Unmarshal([]byte(doc), &v))
		assert.Equal(t, ok, r.Validate(v) == nil, doc)
	}
}

func keysOfMap(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestDocsFromSource(t *testing.T) {
	t.Parallel()
	docs, err := DocsFromSource(".")
	require.NoError(t, err)
	assert.Contains(t, docs["SchemaOptions"], "say what the Go types alone do not")
	assert.Contains(t, docs["SchemaOptions.Fields"], `"Type.key"`)
	assert.NotContains(t, docs, "node", "test files are not read")
}

func TestDefName(t *testing.T) {
	t.Parallel()
	for in, want := range map[reflect.Type]string{reflect.TypeFor[SchemaGen](): "schemaGen", reflect.TypeFor[SchemaOptions](): "schemaOptions",
		reflect.TypeFor[struct{ A int }](): "anon"} {
		assert.Equal(t, want, defName(in))
	}
	type MCPServer struct{}
	assert.Equal(t, "mcpServer", defName(reflect.TypeFor[MCPServer]()))
}
