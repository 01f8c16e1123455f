package config

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentoslab/agentlab/internal/golden"
	"github.com/agentoslab/agentlab/internal/yamlschema"
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

// TestSchemaUpToDate: lab.schema.json is what the Go types generate (go
// generate ./lab/config rewrites it).
func TestSchemaUpToDate(t *testing.T) {
	docs, err := yamlschema.DocsFromSource(".")
	if err != nil {
		t.Fatal(err)
	}
	got, err := generateSchema(docs)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, JSONSchema()) && !golden.Updating() {
		t.Errorf("lab.schema.json is stale: run go generate ./lab/config")
	}
	golden.Check(t, "lab.schema.json", got)
}
