package reports

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

func resolvedSchema(t testing.TB) *jsonschema.Resolved {
	t.Helper()
	var s jsonschema.Schema
	if err := json.Unmarshal(JSONSchema(), &s); err != nil {
		t.Fatalf("schema/results.schema.json: %v", err)
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		t.Fatalf("resolve schema: %v", err)
	}
	return rs
}

func asJSONValue(t testing.TB, data []byte) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestResultsMatchSchema validates the sample results.json, and documents
// that break the schema's rules, against schema/results.schema.json.
func TestResultsMatchSchema(t *testing.T) {
	t.Parallel()
	rs := resolvedSchema(t)
	doc := renderT(t, sampleRun(), FormatJSON)
	if err := rs.Validate(asJSONValue(t, doc)); err != nil {
		t.Fatalf("sample results.json does not satisfy the schema: %v", err)
	}
	empty := renderT(t, &Run{RunID: "r", Model: Model{Kind: ModelStub}}, FormatJSON)
	if err := rs.Validate(asJSONValue(t, empty)); err != nil {
		t.Fatalf("an empty run does not satisfy the schema: %v", err)
	}

	breakers := []struct {
		name   string
		mutate func(m map[string]any)
	}{
		{"unknown verdict", func(m map[string]any) { scenario(m, 0)["verdict"] = "maybe" }},
		{"no run id", func(m map[string]any) { delete(m, "runId") }},
		{"major 2", func(m map[string]any) { m["schemaVersion"] = "2.0" }},
		{"bad sha256", func(m map[string]any) { artifact(m)["sha256"] = "XYZ" }},
		{"absolute artifact path", func(m map[string]any) { artifact(m)["path"] = "/etc/passwd" }},
		{"bad timestamp", func(m map[string]any) { m["startedAt"] = "yesterday" }},
		{"device kind", func(m map[string]any) { m["devices"].([]any)[0].(map[string]any)["kind"] = "tablet" }},
		{"check without ok", func(m map[string]any) {
			delete(scenario(m, 0)["checks"].([]any)[0].(map[string]any), "ok")
		}},
		{"negative count", func(m map[string]any) { m["summary"].(map[string]any)["fail"] = -1 }},
		{"exit code 2 in results", func(m map[string]any) { m["summary"].(map[string]any)["exitCode"] = 2 }},
	}
	for _, b := range breakers {
		t.Run(b.name, func(t *testing.T) {
			m := asJSONValue(t, doc)
			b.mutate(m)
			if err := rs.Validate(m); err == nil {
				t.Fatal("the schema accepted a broken document")
			}
		})
	}

	// Readers accept unknown fields: so does the schema.
	m := asJSONValue(t, doc)
	m["addedInOnePointOne"] = map[string]any{"x": 1}
	scenario(m, 0)["newField"] = true
	m["schemaVersion"] = "1.7"
	if err := rs.Validate(m); err != nil {
		t.Fatalf("the schema refused a 1.7 document with new fields: %v", err)
	}
}

func scenario(m map[string]any, i int) map[string]any {
	return m["scenarios"].([]any)[i].(map[string]any)
}

func artifact(m map[string]any) map[string]any {
	for _, s := range m["scenarios"].([]any) {
		if arts := s.(map[string]any)["artifacts"].([]any); len(arts) > 0 {
			return arts[0].(map[string]any)
		}
	}
	panic("sample has no artifact")
}

// TestSchemaCoversModel keeps the Go model and the JSON Schema from
// drifting apart: every JSON field of every model type is a property of the
// matching schema object, every property is a field, and a field is
// required exactly when it is not omitted when empty.
func TestSchemaCoversModel(t *testing.T) {
	t.Parallel()
	var root map[string]any
	if err := json.Unmarshal(JSONSchema(), &root); err != nil {
		t.Fatal(err)
	}
	defs := root["$defs"].(map[string]any)
	props := root["properties"].(map[string]any)
	types := []struct {
		typ    reflect.Type
		schema map[string]any
	}{
		{reflect.TypeFor[Run](), root},
		{reflect.TypeFor[Selection](), props["selection"].(map[string]any)},
		{reflect.TypeFor[Model](), props["model"].(map[string]any)},
		{reflect.TypeFor[Device](), defs["device"].(map[string]any)},
		{reflect.TypeFor[HealthRecord](), defs["healthRecord"].(map[string]any)},
		{reflect.TypeFor[Event](), defs["event"].(map[string]any)},
		{reflect.TypeFor[Scenario](), defs["scenario"].(map[string]any)},
		{reflect.TypeFor[Attempt](), defs["attempt"].(map[string]any)},
		{reflect.TypeFor[Check](), defs["check"].(map[string]any)},
		{reflect.TypeFor[Artifact](), defs["artifact"].(map[string]any)},
		{reflect.TypeFor[Summary](), defs["summary"].(map[string]any)},
	}
	for _, tc := range types {
		t.Run(tc.typ.Name(), func(t *testing.T) {
			schemaProps := tc.schema["properties"].(map[string]any)
			var required []string
			for _, r := range tc.schema["required"].([]any) {
				required = append(required, r.(string))
			}
			seen := map[string]bool{}
			for f := range tc.typ.Fields() {
				tag := f.Tag.Get("json")
				name, opts, _ := strings.Cut(tag, ",")
				if name == "-" || !f.IsExported() {
					continue
				}
				seen[name] = true
				if _, ok := schemaProps[name]; !ok {
					t.Errorf("field %s (%q) is not in the schema", f.Name, name)
				}
				optional := strings.Contains(opts, "omitempty") || strings.Contains(opts, "omitzero")
				if isReq := slices.Contains(required, name); isReq == optional {
					t.Errorf("field %q: required in schema = %v, but omitted when empty = %v", name, isReq, optional)
				}
			}
			for name := range schemaProps {
				if !seen[name] {
					t.Errorf("schema property %q has no field in %s", name, tc.typ)
				}
			}
		})
	}
}
