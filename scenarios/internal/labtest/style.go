package labtest

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/mattn/go-runewidth"
	"gopkg.in/yaml.v3"
)

// MaxLine is the widest line a file of the suite may hold, in terminal
// columns (a Chinese character or an emoji takes two): everything
// a scenario says is typed YAML, so nothing needs a longer one (fold a
// long description with ">").
const MaxLine = 160

// scriptHeader starts a model script sent as a prompt.
const scriptHeader = "#!agentos-script"

// StyleProblems lists, as "LINE[:COL]: problem", what in a suite file
// breaks the language's style rules: a line over MaxLine characters, a
// string that is a test-caller plan (JSON with "op" keys) or a model
// script — the plan is a caller step's YAML, the script a YAML block of
// scripts. A file that is not YAML is one problem.
func StyleProblems(doc []byte) []string {
	var out []string
	for i, line := range strings.Split(string(doc), "\n") {
		if n := runewidth.StringWidth(line); n > MaxLine {
			out = append(out, fmt.Sprintf("%d: %d columns wide, more than %d (fold long text, or write the value as YAML)", i+1, n, MaxLine))
		}
	}
	var root yaml.Node
	if err := yaml.Unmarshal(doc, &root); err != nil {
		return append(out, err.Error())
	}
	for _, p := range stringsInside(&root) {
		if msg := languageIn(p.Value); msg != "" {
			out = append(out, fmt.Sprintf("%d:%d: %s", p.Line, p.Column, msg))
		}
	}
	return out
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
