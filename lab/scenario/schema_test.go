package scenario

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"gopkg.in/yaml.v3"
)

// schemaPath is the editors' schema, beside the suite.
const schemaPath = "../../scenarios/scenario.schema.json"

func schemaDoc(t *testing.T) map[string]any {
	t.Helper()
	b, err := os.ReadFile(schemaPath)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", schemaPath, err)
	}
	return m
}

func resolvedSchema(t *testing.T) *jsonschema.Resolved {
	t.Helper()
	b, err := os.ReadFile(schemaPath)
	if err != nil {
		t.Fatal(err)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatalf("%s: %v", schemaPath, err)
	}
	r, err := s.Resolve(nil)
	if err != nil {
		t.Fatalf("resolve %s: %v", schemaPath, err)
	}
	return r
}

// asJSON decodes a YAML document into the JSON value an editor's schema
// check sees; ok is false when it is not YAML at all.
func asJSON(doc []byte) (any, bool) {
	var v any
	if err := yaml.Unmarshal(doc, &v); err != nil {
		return nil, false
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, false
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, false
	}
	return out, true
}

// examples returns every document that must be valid: testdata/good and
// the examples of DSL.md. (The suite under scenarios/ checks itself.)
func examples(t *testing.T) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	files, _ := filepath.Glob("testdata/good/*.yaml")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out[f] = b
	}
	for name, b := range dslExamples(t) {
		out[name] = b
	}
	return out
}

// dslExamples returns the ```yaml scenario blocks of DSL.md.
func dslExamples(t *testing.T) map[string][]byte {
	t.Helper()
	b, err := os.ReadFile("DSL.md")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	var cur *bytes.Buffer
	line, start := 0, 0
	for sc.Scan() {
		line++
		text := sc.Text()
		switch {
		case cur == nil && strings.TrimSpace(text) == "```yaml scenario":
			cur, start = &bytes.Buffer{}, line
		case cur != nil && strings.TrimSpace(text) == "```":
			out["DSL.md:"+strconv.Itoa(start)] = cur.Bytes()
			cur = nil
		case cur != nil:
			cur.WriteString(text + "\n")
		}
	}
	if len(out) < 20 {
		t.Fatalf("DSL.md has %d scenario examples; want one per step and check kind", len(out))
	}
	return out
}

// TestExamplesValid: every example parses with the Go validator and
// validates against the schema.
func TestExamplesValid(t *testing.T) {
	r := resolvedSchema(t)
	for name, b := range examples(t) {
		if _, err := Parse(b, filepath.Join(t.TempDir(), "example.yaml"), &Options{ReadFile: func(string) ([]byte, error) {
			return []byte("steps: [{echo: true}]\n"), nil
		}}); err != nil {
			t.Errorf("%s: the validator rejects it:\n%v", name, err)
		}
		v, ok := asJSON(b)
		if !ok {
			t.Errorf("%s: not YAML", name)
			continue
		}
		if err := r.Validate(v); err != nil {
			t.Errorf("%s: the schema rejects it: %v", name, err)
		}
	}
}

// TestDSLCoversEveryKind: DSL.md shows every step kind, subject,
// matcher and invariant.
func TestDSLCoversEveryKind(t *testing.T) {
	var all bytes.Buffer
	for _, b := range dslExamples(t) {
		all.Write(b)
	}
	text := all.String()
	var want []string
	for _, k := range StepKinds {
		want = append(want, "- "+k+":", " "+k+":")
	}
	missing := []string{}
	for i := 0; i < len(want); i += 2 {
		if !strings.Contains(text, want[i]) && !strings.Contains(text, want[i+1]) {
			missing = append(missing, "step "+strings.TrimSuffix(strings.TrimPrefix(want[i], "- "), ":"))
		}
	}
	for _, of := range Ofs {
		if !strings.Contains(text, "of: "+of) {
			missing = append(missing, "of: "+of)
		}
	}
	for _, k := range append(keysOf(reflect.TypeFor[Matcher]()), "dump:", "saved:", "events:", "shell:", "timing:", "any_of:", "all_of:",
		"nothing_deleted:", "no_sms_sent:", "cards_only:", "condition:") {
		k = strings.TrimSuffix(k, ":") + ":"
		if !strings.Contains(text, k) {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		t.Errorf("DSL.md has no example of: %s", strings.Join(missing, ", "))
	}
}

// TestBadCorpusAgreement: the validator rejects every bad file; the
// schema rejects those whose header says "# schema: rejects" and accepts
// the others (whose header says why only the validator can tell).
func TestBadCorpusAgreement(t *testing.T) {
	r := resolvedSchema(t)
	files, _ := filepath.Glob("testdata/bad/*.yaml")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		first, _, _ := strings.Cut(string(b), "\n")
		var wantReject bool
		switch {
		case strings.HasPrefix(first, "# schema: rejects"):
			wantReject = true
		case strings.HasPrefix(first, "# schema: accepts — "):
		default:
			t.Errorf("%s: first line must be '# schema: rejects' or '# schema: accepts — <why>'", f)
			continue
		}
		if _, err := Parse(b, f, nil); err == nil {
			t.Errorf("%s: the validator accepts it", f)
		}
		v, ok := asJSON(b)
		rejected := !ok
		if ok {
			rejected = r.Validate(v) != nil
		}
		if rejected != wantReject {
			t.Errorf("%s: schema rejects=%v, the header says %v", f, rejected, wantReject)
		}
	}
}

// TestSchemaMatchesTypes: the schema's properties are exactly the YAML
// keys of the Go types, at every level.
func TestSchemaMatchesTypes(t *testing.T) {
	root := schemaDoc(t)
	defs := root["$defs"].(map[string]any)
	deref := func(s map[string]any) map[string]any {
		for {
			ref, ok := s["$ref"].(string)
			if !ok {
				return s
			}
			s = defs[strings.TrimPrefix(ref, "#/$defs/")].(map[string]any)
		}
	}
	// props collects an object schema's properties, through allOf and the
	// object alternative of anyOf.
	var props func(s map[string]any) map[string]any
	props = func(s map[string]any) map[string]any {
		s = deref(s)
		out := map[string]any{}
		if p, ok := s["properties"].(map[string]any); ok {
			for k, v := range p {
				out[k] = v
			}
		}
		for _, key := range []string{"allOf", "anyOf"} {
			alts, _ := s[key].([]any)
			for _, a := range alts {
				am := deref(a.(map[string]any))
				if key == "anyOf" && am["type"] != "object" && am["properties"] == nil && am["allOf"] == nil {
					continue
				}
				for k, v := range props(am) {
					out[k] = v
				}
			}
		}
		return out
	}
	seen := map[reflect.Type]bool{}
	var walk func(ty reflect.Type, s map[string]any, at string)
	walk = func(ty reflect.Type, s map[string]any, at string) {
		for ty.Kind() == reflect.Pointer {
			ty = ty.Elem()
		}
		if ty.Kind() == reflect.Struct {
			// Recursive types (conditions in groups, nested matchers)
			// are compared once.
			if seen[ty] {
				return
			}
			seen[ty] = true
		}
		if customTypes[ty] && ty != reflect.TypeFor[Model]() && ty != reflect.TypeFor[Matcher]() && ty != reflect.TypeFor[Step]() {
			return
		}
		switch ty.Kind() {
		case reflect.Slice:
			s = deref(s)
			if items, ok := s["items"].(map[string]any); ok {
				walk(ty.Elem(), items, at+"[]")
				return
			}
			for _, a := range append(anyList(s["anyOf"]), anyList(s["oneOf"])...) {
				if items, ok := deref(a.(map[string]any))["items"].(map[string]any); ok {
					walk(ty.Elem(), items, at+"[]")
				}
			}
			return
		case reflect.Map:
			return
		case reflect.Struct:
		default:
			return
		}
		p := props(s)
		keys := keysOf(ty)
		var schemaKeys []string
		for k := range p {
			schemaKeys = append(schemaKeys, k)
		}
		slices.Sort(schemaKeys)
		if !slices.Equal(keys, schemaKeys) {
			t.Errorf("%s: Go keys %v\n  schema keys %v", at, keys, schemaKeys)
			return
		}
		fields := fieldsOf(ty)
		for _, k := range keys {
			walk(ty.FieldByIndex(fields[k].index).Type, p[k].(map[string]any), at+"."+k)
		}
	}
	walk(reflect.TypeFor[Scenario](), root, "scenario")
}

func anyList(v any) []any {
	l, _ := v.([]any)
	return l
}
