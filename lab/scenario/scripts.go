package scenario

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agentoslab/agentlab/internal/strictyaml"
	"github.com/agentoslab/agentlab/runtime/model/script"
	"gopkg.in/yaml.v3"
)

// Model scripts are written as YAML (inline, or in a side file) and
// decoded with runtime/model/script's own rules, so a bad script step is
// reported at its file:line:col with the scenario. A script a prompt
// sends may refer to the attempt's values (${marker.stdout}); the script's
// own ${result[N]…} substitutions are left to the model.

// scriptRefs are the ${…} forms a script substitutes itself.
var scriptRefs = []string{"${result["}

func escapeScriptRefs(v any) any {
	return mapStrings(v, func(s string) string {
		for _, r := range scriptRefs {
			s = strings.ReplaceAll(s, r, "$"+r)
		}
		return s
	})
}

// mapStrings applies f to every string inside v.
func mapStrings(v any, f func(string) string) any {
	switch t := v.(type) {
	case string:
		return f(t)
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = mapStrings(e, f)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[k] = mapStrings(e, f)
		}
		return out
	}
	return v
}

// RefScripts is the reference to the scenario's scripts as prompt text:
// ${scripts.NAME} is what script: NAME sends, for a prompt written
// inside a raw message.
const RefScripts = "scripts"

// ScriptText is the prompt that sends the scenario's script name: the
// script header, then the script as YAML with its references expanded.
func (s *Scenario) ScriptText(name string, look Lookup) (string, error) {
	sc := s.Scripts[name]
	if sc == nil {
		return "", fmt.Errorf("no script %q", name)
	}
	inner := look
	look = func(n string) (any, bool) {
		if n == RefScripts {
			return nil, false // a script does not send another
		}
		return inner(n)
	}
	doc, err := ExpandValue(escapeScriptRefs(sc.Doc), look)
	if err != nil {
		return "", fmt.Errorf("script %s: %w", name, err)
	}
	b, err := yaml.Marshal(doc)
	if err != nil {
		return "", fmt.Errorf("script %s: %w", name, err)
	}
	return script.Header + "\n" + string(b), nil
}

// scripts loads the side files of the named scripts; each is checked
// where it is used (model, prompts) or, unused, as a prompt would send it.
func (v *validator) scripts() {
	for _, name := range v.scriptNames() {
		p := join("scripts", name)
		if !saveRE.MatchString(name) {
			v.errf(p, "script name %q: want [A-Za-z_][A-Za-z0-9_-]*", clip(name, 40))
		}
		sc := v.s.Scripts[name]
		if sc == nil {
			v.errf(p, "want a script (a mapping with steps) or its file")
			continue
		}
		if sc.File != "" && !v.readScript(sc, p) {
			continue
		}
		if sc.node != nil {
			sc.Doc, _ = v.d.Any(sc.node, p)
		}
	}
}

// unusedScripts checks the scripts no step or model used.
func (v *validator) unusedScripts() {
	for _, name := range v.scriptNames() {
		if sc := v.s.Scripts[name]; sc != nil && !sc.checked {
			v.promptScript(sc, join("scripts", name))
		}
	}
}

func (v *validator) scriptNames() []string {
	names := make([]string, 0, len(v.s.Scripts))
	for name := range v.s.Scripts {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// readScript reads a script's side file, relative to the scenario.
func (v *validator) readScript(sc *Script, path string) bool {
	name := sc.File
	if !filepath.IsAbs(name) && v.s.File != "" {
		name = filepath.Join(filepath.Dir(v.s.File), name)
	}
	b, err := v.read(name)
	if err != nil {
		v.errf(path, "cannot read the script: %v", err)
		return false
	}
	if len(b) > script.MaxSize {
		v.errf(path, "%s: larger than %d bytes", sc.File, script.MaxSize)
		return false
	}
	root, prob := strictyaml.ParseDocument(b, name)
	if prob != nil {
		v.d.Add(*prob)
		return false
	}
	if root == nil {
		root = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	}
	v.d.MarkFile(root, name)
	sc.node = root
	return true
}

// modelScript decodes a script the stub runs, as written.
func (v *validator) modelScript(sc *Script, path string) {
	if sc.node == nil || sc.parsedRaw {
		return
	}
	sc.parsedRaw = true
	sc.Parsed = script.Decode(v.d, sc.node, path)
}

// promptScript checks a script as a prompt sends it: with its references
// to the attempt standing for a word (they are expanded when it is sent).
func (v *validator) promptScript(sc *Script, path string) {
	if sc.node == nil || sc.checked {
		return
	}
	sc.checked = true
	if sc.Doc == nil {
		sc.Doc, _ = v.d.Any(sc.node, path)
	}
	if !hasLabRefs(sc.Doc) {
		v.modelScript(sc, path)
		return
	}
	sc.Refs = true
	script.Decode(v.d, v.stubRefs(sc.node), path)
}

// hasLabRefs reports whether a string inside v refers to the attempt.
func hasLabRefs(v any) bool {
	found := false
	mapStrings(escapeScriptRefs(v), func(s string) string {
		if refs, err := Refs(s); err != nil || len(refs) > 0 {
			found = true
		}
		return s
	})
	return found
}

// stubRefs copies n with every reference to the attempt replaced by a
// word, keeping positions (and the file the nodes came from).
func (v *validator) stubRefs(n *yaml.Node) *yaml.Node {
	c := *n
	if n.Kind == yaml.ScalarNode && strings.Contains(n.Value, "${") {
		c.Value = stubString(n.Value)
	}
	c.Content = make([]*yaml.Node, len(n.Content))
	for i, e := range n.Content {
		c.Content[i] = v.stubRefs(e)
	}
	v.d.CopyMark(n, &c)
	return &c
}

// stubString replaces each ${…} reference of s with "x" (leaving the
// script's own and literal $${).
func stubString(s string) string {
	for _, r := range scriptRefs {
		s = strings.ReplaceAll(s, r, "\x00"+r[2:])
	}
	parts, err := parseTemplate(s)
	if err != nil {
		return strings.ReplaceAll(s, "\x00", "${")
	}
	var b strings.Builder
	for _, p := range parts {
		if p.ref != nil {
			b.WriteString("x")
			continue
		}
		b.WriteString(strings.ReplaceAll(p.text, "\x00", "${"))
	}
	return b.String()
}

// scriptUse checks a step's reference to a script and the references
// inside it.
func (v *validator) scriptUse(path, name string) {
	sc, ok := v.s.Scripts[name]
	if !ok {
		names := make([]string, 0, len(v.s.Scripts))
		for n := range v.s.Scripts {
			names = append(names, n)
		}
		slices.Sort(names)
		msg := fmt.Sprintf("no script %q in scripts", clip(name, 40))
		if s := strictyaml.Suggest(name, names); s != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", s)
		}
		v.errf(path, "%s", msg)
		return
	}
	if sc == nil {
		return
	}
	v.promptScript(sc, join("scripts", name))
	v.inScript = true
	mapStrings(escapeScriptRefs(sc.Doc), func(s string) string {
		v.refs(path, s)
		return s
	})
	v.inScript = false
}

// ScriptTexts is the value of ${scripts}: every script's prompt text,
// expanded with look.
func (s *Scenario) ScriptTexts(look Lookup) (map[string]any, error) {
	out := make(map[string]any, len(s.Scripts))
	for name := range s.Scripts {
		t, err := s.ScriptText(name, look)
		if err != nil {
			return nil, err
		}
		out[name] = t
	}
	return out, nil
}
