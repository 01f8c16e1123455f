package scenarios

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// maxLine is the longest line a file of the suite may hold: everything
// a scenario says is typed YAML, so nothing needs a longer one (fold a
// long description with ">").
const maxLine = 160

// scriptHeader starts a model script sent as a prompt.
const scriptHeader = "#!agentos-script"

// suiteFiles are every YAML file of the suite: scenarios, model scripts
// and fragments.
func suiteFiles(t *testing.T) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (path == "testdata" || strings.HasPrefix(d.Name(), ".") && path != ".") {
			return filepath.SkipDir
		}
		if ext := filepath.Ext(path); !d.IsDir() && (ext == ".yaml" || ext == ".yml") {
			out = append(out, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) < 60 {
		t.Fatalf("found %d YAML files; the suite is larger", len(out))
	}
	return out
}

// TestNoLanguageInStrings: no file of the suite holds a line over 160
// characters, or a string that is a test-caller plan (JSON with "op"
// keys) or a model script — the plan is a caller step's YAML, the script
// a YAML block of scripts.
func TestNoLanguageInStrings(t *testing.T) {
	t.Parallel()
	for _, f := range suiteFiles(t) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			if n := utf8.RuneCountInString(line); n > maxLine {
				t.Errorf("%s:%d: %d characters, more than %d (fold long text, or write the value as YAML)", f, i+1, n, maxLine)
			}
		}
		var root yaml.Node
		if err := yaml.Unmarshal(b, &root); err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		for _, p := range stringsInside(&root) {
			if msg := languageIn(p.Value); msg != "" {
				t.Errorf("%s:%d:%d: %s", f, p.Line, p.Column, msg)
			}
		}
	}
}

// stringsInside lists the string scalars of a YAML tree.
func stringsInside(n *yaml.Node) []*yaml.Node {
	var out []*yaml.Node
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str" {
		out = append(out, n)
	}
	for _, c := range n.Content {
		out = append(out, stringsInside(c)...)
	}
	return out
}

// languageIn says what another language a string holds, or "".
func languageIn(s string) string {
	if strings.Contains(s, scriptHeader) {
		return "a model script inside a string: put it in scripts and refer to it by name (script: NAME)"
	}
	t := strings.TrimSpace(s)
	if !strings.HasPrefix(t, "{") && !strings.HasPrefix(t, "[") {
		return ""
	}
	var v any
	if json.Unmarshal([]byte(t), &v) != nil {
		return ""
	}
	if hasOp(v) {
		return "a JSON plan of the test caller inside a string: write it as a caller step's plan"
	}
	return ""
}

// hasOp reports whether v is an operation ({"op": …}), a list of them or
// {"ops": […]}.
func hasOp(v any) bool {
	switch x := v.(type) {
	case map[string]any:
		if _, ok := x["op"]; ok {
			return true
		}
		if ops, ok := x["ops"].([]any); ok {
			return hasOp(ops)
		}
	case []any:
		for _, e := range x {
			if hasOp(e) {
				return true
			}
		}
	}
	return false
}

func TestLanguageIn(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]bool{
		`[{"op":"connect"},{"op":"new","as":"s1"}]`:     true,
		`{"op":"raw_open"}`:                             true,
		` {"ops":[{"op":"list"}]}`:                      true,
		"#!agentos-script\nsteps:\n  - text: working\n": true,
		`{"title":"plan","content":"call Wang"}`:        false,
		`{"jsonrpc":"2.0","id":1,"method":"x"}`:         false,
		"[agentos:tool_failed]":                         false,
		"hello":                                         false,
	} {
		if got := languageIn(s) != ""; got != want {
			t.Errorf("languageIn(%q) = %v, want %v", s, got, want)
		}
	}
	if fmt.Sprint(hasOp(nil)) != "false" {
		t.Error("hasOp(nil)")
	}
}
