package scenario

import (
	"errors"
	"io/fs"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/agentoslab/agentlab/internal/strictyaml"
	"gopkg.in/yaml.v3"
)

// A fragment is setup shared by scenarios: a file NAME.fragment.yaml,
// in a scenario's folder or the folder above it, holding
//
//	description: what the steps do
//	params: [package]          # values the includer gives with with:
//	steps:
//	  - install: {caller: "${params.package}"}
//	  …
//
// A step {include: NAME} or {include: {fragment: NAME, with: {…}}} in a
// scenario's setup or steps is replaced by the fragment's steps when the
// file is read, each ${params.NAME} replaced by its value; problems in
// those steps are reported at the fragment's file:line:col.

// FragmentSuffix ends the name of every fragment file.
const FragmentSuffix = ".fragment.yaml"

var (
	fragmentNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)
	paramRE        = regexp.MustCompile(`\$\{params\.([A-Za-z_][A-Za-z0-9_-]*)\}`)
)

// fragment is a parsed fragment file.
type fragment struct {
	file   string
	params []string
	steps  []*yaml.Node
}

// expandIncludes replaces the include steps of the document's setup and
// steps by their fragments' steps.
func (v *validator) expandIncludes(root *yaml.Node) {
	if root.Kind != yaml.MappingNode {
		return
	}
	loaded := map[string]*fragment{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		key, seq := root.Content[i].Value, root.Content[i+1]
		if (key != "setup" && key != "steps") || seq.Kind != yaml.SequenceNode {
			continue
		}
		var out []*yaml.Node
		for j, item := range seq.Content {
			inc := includeNode(item)
			if inc == nil {
				out = append(out, item)
				continue
			}
			out = append(out, v.include(item, inc, loaded, join(index(key, j), KindInclude))...)
		}
		seq.Content = out
	}
}

// includeNode is the value of a step's include key, if it has one.
func includeNode(step *yaml.Node) *yaml.Node {
	if step.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(step.Content); i += 2 {
		if step.Content[i].Value == KindInclude {
			return step.Content[i+1]
		}
	}
	return nil
}

// include returns the steps an include step stands for (none when it is
// wrong: the problem is recorded).
func (v *validator) include(step, inc *yaml.Node, loaded map[string]*fragment, path string) []*yaml.Node {
	if len(step.Content) != 2 {
		v.d.Addf(step, path, "an include step takes nothing but include: its steps carry their own name, device and save")
		return nil
	}
	var in IncludeStep
	switch {
	case inc.Kind == yaml.ScalarNode && inc.ShortTag() == "!!str":
		in.Fragment = inc.Value
	case inc.Kind == yaml.MappingNode:
		before := len(v.d.Problems())
		v.d.Decode(inc, &in, path)
		if len(v.d.Problems()) > before {
			return nil
		}
	default:
		v.d.Addf(inc, path, "want a fragment's name, or {fragment: NAME, with: {PARAM: value}}, got %s", describe(inc))
		return nil
	}
	if !fragmentNameRE.MatchString(in.Fragment) {
		v.d.Addf(inc, path, "fragment %q: want a name like test-caller (its file is NAME%s)", clip(in.Fragment, 40), FragmentSuffix)
		return nil
	}
	fr, ok := loaded[in.Fragment]
	if !ok {
		fr = v.loadFragment(inc, in.Fragment, path)
		loaded[in.Fragment] = fr
	}
	if fr == nil {
		return nil
	}
	good := true
	for _, p := range fr.params {
		if _, given := in.With[p]; !given {
			v.d.Addf(inc, path, "fragment %s needs with: {%s: …}", in.Fragment, p)
			good = false
		}
	}
	for k := range in.With {
		if !slices.Contains(fr.params, k) {
			v.d.Addf(inc, join(path, "with."+k), "fragment %s has no param %q (its params: %s)", in.Fragment, k, strings.Join(fr.params, ", "))
			good = false
		}
	}
	if !good {
		return nil
	}
	out := make([]*yaml.Node, len(fr.steps))
	for i, s := range fr.steps {
		out[i] = v.withParams(s, in.With)
	}
	return out
}

// loadFragment reads NAME.fragment.yaml from the scenario's folder or the
// one above it.
func (v *validator) loadFragment(at *yaml.Node, name, path string) *fragment {
	dir := filepath.Dir(v.s.File)
	var tried []string
	for _, d := range []string{dir, filepath.Dir(dir)} {
		file := filepath.Join(d, name+FragmentSuffix)
		if slices.Contains(tried, file) {
			continue
		}
		tried = append(tried, file)
		b, err := v.read(file)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			v.d.Addf(at, path, "cannot read the fragment: %v", err)
			return nil
		}
		return v.parseFragment(at, file, b, path)
	}
	v.d.Addf(at, path, "no fragment %s: looked for %s", name, strings.Join(tried, " and "))
	return nil
}

func (v *validator) parseFragment(at *yaml.Node, file string, b []byte, path string) *fragment {
	if len(b) > MaxFileSize {
		v.d.Addf(at, path, "%s: larger than %d bytes", file, MaxFileSize)
		return nil
	}
	root, prob := strictyaml.ParseDocument(b, file)
	if prob != nil {
		v.d.Add(*prob)
		return nil
	}
	if root == nil || root.Kind != yaml.MappingNode {
		v.d.Add(Problem{File: file, Msg: "a fragment is a mapping with description, params and steps"})
		return nil
	}
	v.d.MarkFile(root, file)
	fr := &fragment{file: file}
	bad := false
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, val := root.Content[i], root.Content[i+1]
		switch k.Value {
		case "description":
			if val.Kind != yaml.ScalarNode {
				v.d.Addf(val, "description", "want text, got %s", describe(val))
				bad = true
			}
		case "params":
			before := len(v.d.Problems())
			v.d.Decode(val, &fr.params, "params")
			bad = bad || len(v.d.Problems()) > before
			for _, p := range fr.params {
				if !saveRE.MatchString(p) {
					v.d.Addf(val, "params", "param %q: want [A-Za-z_][A-Za-z0-9_-]*", clip(p, 40))
					bad = true
				}
			}
		case "steps":
			if val.Kind != yaml.SequenceNode || len(val.Content) == 0 {
				v.d.Addf(val, "steps", "want a list of steps, got %s", describe(val))
				bad = true
				continue
			}
			fr.steps = val.Content
		default:
			v.d.Addf(k, k.Value, "%s", strictyaml.UnknownKey(k.Value, []string{"description", "params", "steps"}))
			bad = true
		}
	}
	if fr.steps == nil && !bad {
		v.d.Addf(root, "steps", "a fragment needs steps")
		bad = true
	}
	for _, s := range fr.steps {
		if includeNode(s) != nil {
			v.d.Addf(s, "steps", "a fragment cannot include another fragment")
			bad = true
		}
		v.checkParams(s, fr.params, &bad)
	}
	if bad {
		return nil
	}
	return fr
}

// checkParams reports ${params.X} for an X the fragment does not declare.
func (v *validator) checkParams(n *yaml.Node, params []string, bad *bool) {
	if n.Kind == yaml.ScalarNode {
		for _, m := range paramRE.FindAllStringSubmatch(n.Value, -1) {
			if !slices.Contains(params, m[1]) {
				v.d.Addf(n, "", "${params.%s}: the fragment declares no param %q", m[1], m[1])
				*bad = true
			}
		}
	}
	for _, c := range n.Content {
		v.checkParams(c, params, bad)
	}
}

// withParams copies n with ${params.X} replaced by the values given.
func (v *validator) withParams(n *yaml.Node, with map[string]string) *yaml.Node {
	c := *n
	if n.Kind == yaml.ScalarNode && strings.Contains(n.Value, "${params.") {
		c.Value = paramRE.ReplaceAllStringFunc(n.Value, func(m string) string {
			return with[paramRE.FindStringSubmatch(m)[1]]
		})
		c.Tag, c.Style = "!!str", yaml.DoubleQuotedStyle
	}
	c.Content = make([]*yaml.Node, len(n.Content))
	for i, e := range n.Content {
		c.Content[i] = v.withParams(e, with)
	}
	v.d.CopyMark(n, &c)
	return &c
}
