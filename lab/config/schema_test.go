package config

import (
	"encoding/json"
	"github.com/agentoslab/agentlab/internal/strictyaml"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"gopkg.in/yaml.v3"
)

func resolvedSchema(t *testing.T) *jsonschema.Resolved {
	t.Helper()
	var s jsonschema.Schema
	if err := json.Unmarshal(JSONSchema(), &s); err != nil {
		t.Fatalf("lab.schema.json: %v", err)
	}
	r, err := s.Resolve(nil)
	if err != nil {
		t.Fatalf("resolve lab.schema.json: %v", err)
	}
	return r
}

// yamlAsJSON decodes a YAML document into the JSON value the schema sees.
func yamlAsJSON(t *testing.T, doc []byte) any {
	t.Helper()
	var v any
	if err := yaml.Unmarshal(doc, &v); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if out == nil {
		out = map[string]any{}
	}
	return out
}

func TestSchemaAcceptsDefaultAndExamples(t *testing.T) {
	r := resolvedSchema(t)
	if err := r.Validate(yamlAsJSON(t, DefaultYAML())); err != nil {
		t.Errorf("default.yaml: %v", err)
	}
	files, _ := filepath.Glob("testdata/examples/*.yaml")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Validate(yamlAsJSON(t, b)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

func TestSchemaRejects(t *testing.T) {
	r := resolvedSchema(t)
	for _, doc := range []string{
		"devcies: {}\n",
		"model: remote\n",
		"model: {mode: live, apiKey: x}\n",
		"devices: {virtual: {count: two}}\n",
		"devices: {virtual: {rootMethod: supersu}}\n",
		"devices: {emulators: [{avd: {name: a}, container: {image: b}}]}\n",
		"pools: [{abi: x86_64}]\n",
		"artifacts: {policy: sometimes}\n",
		"timeouts: {scenario: soon}\n",
		"build: {abis: [mips]}\n",
	} {
		if err := r.Validate(yamlAsJSON(t, []byte(doc))); err == nil {
			t.Errorf("schema accepts %q", doc)
		}
	}
}

// TestSchemaMatchesTypes: the schema's properties are exactly the yaml
// names of the Go types, at every level, so neither can drift.
func TestSchemaMatchesTypes(t *testing.T) {
	var root map[string]any
	if err := json.Unmarshal(JSONSchema(), &root); err != nil {
		t.Fatal(err)
	}
	defs := root["$defs"].(map[string]any)
	resolve := func(s map[string]any) map[string]any {
		for {
			if ref, ok := s["$ref"].(string); ok {
				s = defs[filepath.Base(ref)].(map[string]any)
				continue
			}
			if alts, ok := s["anyOf"].([]any); ok {
				// The object alternative (model: "stub" | {…}).
				for _, a := range alts {
					am := a.(map[string]any)
					if r, ok := am["$ref"].(string); ok {
						am = defs[filepath.Base(r)].(map[string]any)
					}
					if am["type"] == "object" {
						s = am
						break
					}
				}
			}
			return s
		}
	}
	var walk func(t0 reflect.Type, s map[string]any, at string)
	walk = func(t0 reflect.Type, s map[string]any, at string) {
		for t0.Kind() == reflect.Pointer {
			t0 = t0.Elem()
		}
		s = resolve(s)
		switch t0.Kind() {
		case reflect.Slice:
			if items, ok := s["items"].(map[string]any); ok {
				walk(t0.Elem(), items, at+"[]")
			}
			return
		case reflect.Map:
			if ap, ok := s["additionalProperties"].(map[string]any); ok {
				walk(t0.Elem(), ap, at+".*")
			}
			return
		case reflect.Struct:
		default:
			return
		}
		if t0 == reflect.TypeFor[Duration]() {
			return
		}
		props, _ := s["properties"].(map[string]any)
		var inSchema []string
		for k := range props {
			inSchema = append(inSchema, k)
		}
		sort.Strings(inSchema)
		if names := strictyaml.Keys(t0); !slices.Equal(names, inSchema) {
			t.Errorf("%s: Go fields %v, schema properties %v", at, names, inSchema)
		}
		if s["additionalProperties"] != false {
			t.Errorf("%s: schema allows unknown keys", at)
		}
		for i := range t0.NumField() {
			f := t0.Field(i)
			if n, _, _ := strings.Cut(f.Tag.Get("yaml"), ","); n != "" && n != "-" && props[n] != nil {
				walk(f.Type, props[n].(map[string]any), at+"."+n)
			}
		}
	}
	walk(configType, root, "lab.yaml")
}
