package scenario

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/agentoslab/agentlab/internal/strictyaml"
	"github.com/agentoslab/agentlab/internal/yamlschema"
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
		if _, err := Parse(b, filepath.Join(t.TempDir(), "example.yaml"), &Options{ReadFile: exampleFiles}); err != nil {
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

// exampleFiles serves the files examples refer to: the suite's fragments,
// and a script for any other name.
func exampleFiles(name string) ([]byte, error) {
	if strings.HasSuffix(name, FragmentSuffix) {
		return os.ReadFile(filepath.Join("../../scenarios", filepath.Base(name)))
	}
	return []byte("steps: [{echo: true}]\n"), nil
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
	for _, op := range planOpNames {
		if !strings.Contains(text, "- "+op+"\n") && !strings.Contains(text, "- "+op+":") && !strings.Contains(text, "{"+op+":") &&
			!strings.Contains(text, " "+op+",") && !strings.Contains(text, "["+op+",") {
			missing = append(missing, "operation "+op)
		}
	}
	for _, of := range Ofs {
		if !strings.Contains(text, "of: "+of) {
			missing = append(missing, "of: "+of)
		}
	}
	for _, k := range append(strictyaml.Keys(reflect.TypeFor[Matcher]()), "dump:", "saved:", "events:", "shell:", "timing:", "any_of:", "all_of:",
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
		if !IsScenarioFile(f) {
			continue
		}
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

// TestSchemaUpToDate: scenarios/scenario.schema.json is what the Go types
// generate (go generate ./lab/scenario rewrites it).
func TestSchemaUpToDate(t *testing.T) {
	docs, err := yamlschema.DocsFromSource(".")
	if err != nil {
		t.Fatal(err)
	}
	got, err := generateSchema(docs)
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(schemaFile, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(schemaFile)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("%s is stale: run go generate ./lab/scenario", schemaFile)
	}
}
