package script

import (
	"encoding/json"
	"errors"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/agentoslab/agentlab/internal/yamlschema"
	"github.com/google/jsonschema-go/jsonschema"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"
)

// example is a fenced block of FORMAT.md.
type example struct {
	lang, tag, body string
	line            int
}

var fenceRE = regexp.MustCompile("(?ms)^```(yaml|json) (script|invalid-script)\n(.*?)^```")

func formatExamples(t testing.TB) []example {
	t.Helper()
	doc, err := os.ReadFile("FORMAT.md")
	if err != nil {
		t.Fatal(err)
	}
	var out []example
	for _, m := range fenceRE.FindAllSubmatchIndex(doc, -1) {
		out = append(out, example{
			lang: string(doc[m[2]:m[3]]), tag: string(doc[m[4]:m[5]]), body: string(doc[m[6]:m[7]]),
			line: 1 + strings.Count(string(doc[:m[0]]), "\n"),
		})
	}
	if len(out) < 10 {
		t.Fatalf("found only %d examples in FORMAT.md", len(out))
	}
	return out
}

func resolvedSchema(t testing.TB) *jsonschema.Resolved {
	t.Helper()
	var s jsonschema.Schema
	if err := json.Unmarshal(Schema(), &s); err != nil {
		t.Fatalf("schema: %v", err)
	}
	r, err := s.Resolve(nil)
	if err != nil {
		t.Fatalf("resolve schema: %v", err)
	}
	return r
}

// instance turns a YAML or JSON document into the JSON value the schema
// validates.
func instance(t testing.TB, body string) any {
	t.Helper()
	var v any
	if err := yaml.Unmarshal([]byte(body), &v); err != nil {
		t.Fatalf("yaml: %v", err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("json: %v", err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestFormatExamples: every example in FORMAT.md marked "script" is valid
// by the schema and by Parse; every "invalid-script" is rejected by Parse.
func TestFormatExamples(t *testing.T) {
	t.Parallel()
	schema := resolvedSchema(t)
	for _, ex := range formatExamples(t) {
		switch ex.tag {
		case "script":
			if err := schema.Validate(instance(t, ex.body)); err != nil {
				t.Errorf("FORMAT.md:%d: schema rejects the example: %v", ex.line, err)
			}
			if _, err := Parse([]byte(ex.body)); err != nil {
				t.Errorf("FORMAT.md:%d: Parse rejects the example: %v", ex.line, err)
			}
		case "invalid-script":
			if _, err := Parse([]byte(ex.body)); err == nil {
				t.Errorf("FORMAT.md:%d: Parse accepts an invalid example", ex.line)
			}
		}
	}
}

// TestParseErrors: documents Parse rejects, with the line its error
// names; those the schema can express are rejected by the schema too.
func TestParseErrors(t *testing.T) {
	t.Parallel()
	schema := resolvedSchema(t)
	for _, tc := range []struct {
		name, doc, want string
		schemaToo       bool
	}{
		{"unknown top key", "stepz: []\n", `script:1:1: stepz: unknown key (did you mean "steps"?)`, true},
		{"unknown step key", "steps:\n  - text: hi\n    colour: blue\n", "script:3:5: steps[0].colour: unknown key (known: chunkChars", true},
		{"unknown fail key", "steps:\n  - fail: {status: 500, why: x}\n", "script:2:25: steps[0].fail.why: unknown key", true},
		{"not a mapping", "- text: hi\n", "script:1:1: a script is a mapping", true},
		{"text number", "steps:\n  - text: 5\n", "script:2:11: steps[0].text: want a string", true},
		{"name number", "steps:\n  - toolCalls: [{name: 5}]\n", "script:2:24: steps[0].toolCalls[0].name: want a string", true},
		{"final number", "final: 5\n", "script:1:8: final: want a string", true},
		{"version 2", "version: 2\n", "version 2", true},
		{"two kinds", "steps:\n  - echo: true\n    fail: {status: 500}\n", "script:2:5: steps[0]: fail, compromised and echo", true},
		{"fail with text", "steps:\n  - text: x\n    fail: {status: 500}\n", "script:2:5: steps[0]: a fail step takes only delayMs", true},
		{"echo with text", "steps:\n  - echo: true\n    text: x\n", "an echo step takes only", true},
		{"compromised with calls", "steps:\n  - compromised: true\n    toolCalls: [{name: a}]\n", "a compromised step takes only", true},
		{"compromised not last", "steps:\n  - compromised: true\n  - text: x\n", "script:2:5: steps[0]: a compromised step answers every remaining call", false},
		{"status 200", "steps:\n  - fail: {status: 200}\n", "not a failing HTTP status", true},
		{"status 600", "steps:\n  - fail: {status: 600}\n", "not a failing HTTP status", true},
		{"fail empty", "steps:\n  - fail: {}\n", "fail needs a status or hang", true},
		{"hang and status", "steps:\n  - fail: {hang: true, status: 500}\n", "fail.hang excludes", true},
		{"retryAfter junk", "steps:\n  - fail: {status: 429, retryAfter: soon}\n", "neither whole seconds nor an HTTP date", false},
		{"retryAfter negative", "steps:\n  - fail: {status: 429, retryAfter: -1}\n", "neither whole seconds", true},
		{"stop unknown", "steps:\n  - text: x\n    stop: done\n", `stop "done"`, true},
		{"cut and hang", "steps:\n  - text: x\n    cutAfter: 1\n    hangAfter: 1\n", "exclude each other", true},
		{"negative delay", "steps:\n  - text: x\n    delayMs: -1\n", "delayMs must be between", true},
		{"huge delay", "steps:\n  - text: x\n    delayMs: 600001\n", "delayMs must be between", true},
		{"chunkChars 0", "steps:\n  - text: x\n    chunkChars: 0\n", "chunkChars must be at least 1", true},
		{"repeat 0", "steps:\n  - text: x\n    repeat: 0\n", "repeat must be at least 1", true},
		{"repeat without text", "steps:\n  - repeat: 2\n", "repeat needs a text", false},
		{"repeat too many chunks", "steps:\n  - text: [a, b]\n    repeat: 600000\n", "more than 1048576 chunks", false},
		{"repeat too long", "steps:\n  - text: abcdefghijklmnopqrstuvwxyz\n    repeat: 1000000\n", "more than 16777216 characters", false},
		{"call without name", "steps:\n  - toolCalls: [{arguments: {}}]\n", "script:2:17: steps[0].toolCalls[0]: a tool call needs a name or an mcp", true},
		{"name and mcp", "steps:\n  - toolCalls: [{name: a, mcp: [p, s, t]}]\n", "name and mcp exclude", true},
		{"mcp two", "steps:\n  - toolCalls: [{mcp: [p, s]}]\n", "mcp is [plugin, server, tool]", true},
		{"mcp empty", "steps:\n  - toolCalls: [{mcp: [p, \"\", t]}]\n", "must not be empty", true},
		{"empty name", "steps:\n  - toolCalls: [{name: \"\"}]\n", "name must not be empty", true},
		{"arguments list", "steps:\n  - toolCalls: [{name: a, arguments: [1]}]\n", "arguments must be a mapping", true},
		{"lone dollar", "steps:\n  - toolCalls: [{name: a, arguments: {p: costs $5}}]\n", "write $$ for a dollar sign", false},
		{"bad ref", "steps:\n  - toolCalls: [{name: a, arguments: {p: \"${result[x]}\"}}]\n", "want result[N]", false},
		{"unclosed", "steps:\n  - toolCalls: [{name: a, arguments: {p: \"${result[0]\"}}]\n", "unclosed ${", false},
		{"alias", "a: &x {k: 1}\nsteps:\n  - toolCalls: [{name: a, arguments: *x}]\n", "", false},
		{"nan", "steps:\n  - toolCalls: [{name: a, arguments: {n: .nan}}]\n", "not a finite number", false},
		{"two documents", "steps: []\n---\nsteps: []\n", "a file holds one document", false},
		{"duplicate key", "steps: []\nsteps: []\n", "repeated key (first at line 1)", false},
		{"bad yaml", "steps: [\n", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse([]byte(tc.doc))
			if err == nil {
				t.Fatalf("Parse accepted %q", tc.doc)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("error does not wrap ErrInvalid: %v", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not contain %q", err, tc.want)
			}
			if tc.schemaToo {
				if err := schema.Validate(instance(t, tc.doc)); err == nil {
					t.Errorf("schema accepts %q", tc.doc)
				}
			}
		})
	}
}

func TestParseValues(t *testing.T) {
	t.Parallel()
	s, err := Parse([]byte(`#!agentos-script
version: 1
final: bye
steps:
  - text: "abcdé"
    chunkChars: 2
    thinking: [x, y]
    delayMs: 5
    intervalMs: 7
    toolCalls:
      - name: t
        id: my-id
        arguments: {day: 2026-01-01, n: 3, f: 1.5, b: true, z: null, l: [1, "two"], "1": one}
    cutAfter: 3
  - fail: {status: 429, retryAfter: 20}
  - fail: {hang: true}
  - echo: true
  - compromised: true
`))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.steps) != 5 || s.final == nil || *s.final != "bye" {
		t.Fatalf("script %+v", s)
	}
	st := s.steps[0]
	if strings.Join(st.text, "|") != "ab|cd|é" || strings.Join(st.thinking, "|") != "x|y" {
		t.Errorf("chunks %q %q", st.text, st.thinking)
	}
	if st.delay.Milliseconds() != 5 || st.interval.Milliseconds() != 7 || st.cutAfter != 3 || st.hangAfter != -1 || st.line != 5 {
		t.Errorf("step %+v", st)
	}
	b, _ := json.Marshal(st.toolCalls[0].arguments)
	if want := `{"1":"one","b":true,"day":"2026-01-01","f":1.5,"l":[1,"two"],"n":3,"z":null}`; string(b) != want {
		t.Errorf("arguments %s, want %s", b, want)
	}
	if f := s.steps[1].fail; f == nil || f.status != 429 || f.retryAfter != "20" {
		t.Errorf("fail %+v", f)
	}
	if !s.steps[2].fail.hang || !s.steps[3].echo || !s.steps[4].compromised {
		t.Errorf("kinds %+v", s.steps[2:])
	}
	for _, empty := range []string{"", "\n", "# nothing\n", "#!agentos-script\n", "~\n"} {
		s, err := Parse([]byte(empty))
		if err != nil || len(s.steps) != 0 || s.final != nil {
			t.Errorf("Parse(%q) = %+v, %v", empty, s, err)
		}
	}
}

func TestParseRepeat(t *testing.T) {
	t.Parallel()
	s, err := Parse([]byte("steps:\n  - text: abcdé\n    chunkChars: 2\n    repeat: 3\n    hangAfter: 8\n"))
	require.NoError(t, err)
	st := s.steps[0]
	// Splitting comes first, then the chunks go round three times.
	assert.Equal(t, []string{"ab", "cd", "é", "ab", "cd", "é", "ab", "cd", "é"}, st.text)
	assert.Equal(t, 8, st.hangAfter)
}

func TestLoad(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := dir + "/s.yaml"
	if err := os.WriteFile(p, []byte("steps: [{text: hi}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := Load(p)
	if err != nil || len(s.steps) != 1 {
		t.Fatalf("Load = %+v, %v", s, err)
	}
	if err := os.WriteFile(p, []byte("steps: [{txt: hi}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(p); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), p) {
		t.Errorf("Load(bad) = %v", err)
	}
	if _, err := Load(dir + "/missing"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load(missing) = %v", err)
	}
	big := make([]byte, MaxSize+10)
	for i := range big {
		big[i] = '#'
	}
	if err := os.WriteFile(p, big, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(p); !errors.Is(err, ErrInvalid) {
		t.Errorf("Load(big) = %v", err)
	}
}

// TestSchemaUpToDate: script.schema.json is what the document types
// generate (go generate ./runtime/model/script rewrites it).
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
		if err := os.WriteFile("script.schema.json", got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if string(got) != string(Schema()) {
		t.Errorf("script.schema.json is stale: run go generate ./runtime/model/script")
	}
}
