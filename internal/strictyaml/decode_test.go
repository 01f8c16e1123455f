package strictyaml

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"
)

type dur time.Duration

type inner struct {
	Name  string   `yaml:"name"`
	Count int      `yaml:"count"`
	On    bool     `yaml:"on"`
	Ratio float64  `yaml:"ratio"`
	Tags  []string `yaml:"tags"`
}

type base struct {
	Shared string `yaml:"shared"`
}

type doc struct {
	base    `yaml:",inline"`
	Title   string            `yaml:"title"`
	Inner   inner             `yaml:"inner"`
	Opt     *inner            `yaml:"opt"`
	List    []inner           `yaml:"list"`
	Labels  map[string]string `yaml:"labels"`
	Wait    dur               `yaml:"wait"`
	Free    any               `yaml:"free"`
	Small   int8              `yaml:"small"`
	private int
}

var errTest = errors.New("invalid test document")

func decodeDur(d *Decoder, n *yaml.Node, v reflect.Value, path string) {
	x, err := time.ParseDuration(n.Value)
	if n.Kind != yaml.ScalarNode || err != nil {
		d.Addf(n, path, "want a duration, got %s", Describe(n))
		return
	}
	v.SetInt(int64(x))
}

func decode(t *testing.T, src string, opts Options) (*doc, *Decoder, error) {
	t.Helper()
	root, prob := ParseDocument([]byte(src), "t.yaml")
	if prob != nil {
		return nil, nil, &Error{Problems: []Problem{*prob}, Kind: errTest}
	}
	opts.File = "t.yaml"
	opts.Types = map[reflect.Type]DecodeFunc{reflect.TypeFor[dur](): decodeDur}
	d := NewDecoder(opts)
	var out doc
	d.Decode(root, &out, "")
	return &out, d, d.Err(errTest)
}

func TestDecodeGood(t *testing.T) {
	t.Parallel()
	src := `shared: s
title: T
inner: {name: a, count: 3, on: true, ratio: 0.5, tags: [x, y]}
opt: {name: o}
list:
  - {name: first}
  - name: second
labels: {k: v}
wait: 15s
free: {a: [1, true, null, "s"], b: 2026-01-01}
small: -7
`
	got, d, err := decode(t, src, Options{})
	require.NoError(t, err)
	assert.Equal(t, "s", got.Shared, "inlined fields decode")
	assert.Equal(t, inner{Name: "a", Count: 3, On: true, Ratio: 0.5, Tags: []string{"x", "y"}}, got.Inner)
	require.NotNil(t, got.Opt)
	assert.Equal(t, "o", got.Opt.Name)
	assert.Equal(t, []inner{{Name: "first"}, {Name: "second"}}, got.List)
	assert.Equal(t, map[string]string{"k": "v"}, got.Labels)
	assert.Equal(t, dur(15*time.Second), got.Wait, "a registered type decodes by its own rules")
	assert.Equal(t, map[string]any{"a": []any{1.0, true, nil, "s"}, "b": "2026-01-01"}, got.Free, "free values are JSON-like; timestamps stay text")
	assert.Equal(t, int8(-7), got.Small)
	assert.Equal(t, Pos{Line: 7, Col: 5}, d.PosOf("list[1]"), "list elements record their position")
	assert.Equal(t, Pos{Line: 7, Col: 5}, d.PosOf("list[1].name"), "a field's key position")
	assert.Equal(t, Pos{Line: 3, Col: 1}, d.PosOf("inner.missing"), "an unwritten field is placed at its nearest written parent")
}

func TestDecodeProblems(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, src string
		opts      Options
		want      []string
	}{
		{"unknown key with suggestion", "titel: x\n", Options{}, []string{`t.yaml:1:1: titel: unknown key (did you mean "title"?)`}},
		{"unknown key far from any", "zzzzzz: x\n", Options{}, []string{`t.yaml:1:1: zzzzzz: unknown key (known: free, inner, labels, list, opt, shared, small, title, wait)`}},
		{"nested unknown key", "inner:\n  nmae: x\n", Options{}, []string{`t.yaml:2:3: inner.nmae: unknown key (did you mean "name"?)`}},
		{"repeated key", "title: a\ntitle: b\n", Options{}, []string{`t.yaml:2:1: title: repeated key (first at line 1)`}},
		{"repeated map key", "labels: {a: x, a: y}\n", Options{}, []string{`t.yaml:1:16: labels.a: repeated key (first at line 1)`}},
		{"every problem at once", "inner: {count: two, on: yes please}\ntitle: [a]\n", Options{}, []string{
			`t.yaml:1:16: inner.count: want an integer, got "two"`,
			`t.yaml:1:25: inner.on: want true or false, got "yes please"`,
			`t.yaml:2:8: title: want a string, got a list`}},
		{"quoted integer", "inner: {count: \"2\"}\n", Options{}, []string{`t.yaml:1:16: inner.count: want an integer, got "2"`}},
		{"integer out of range", "small: 300\n", Options{}, []string{`t.yaml:1:8: small: integer out of range: 300`}},
		{"not a list", "list: {a: 1}\n", Options{}, []string{`t.yaml:1:7: list: want a list, got a mapping`}},
		{"registered type's problem", "wait: soon\n", Options{}, []string{`t.yaml:1:7: wait: want a duration, got "soon"`}},
		{"null string", "title: ~\n", Options{}, []string{`t.yaml:1:8: title: want a string, got nothing (null)`}},
		{"null struct", "inner: ~\n", Options{}, []string{`t.yaml:1:8: inner: want a mapping, got nothing (null)`}},
		{"alias", "inner: &a {name: x}\nopt: *a\n", Options{}, []string{`t.yaml:1:8: inner: anchors and aliases are not allowed`, `t.yaml:2:6: opt: anchors and aliases are not allowed`}},
		{"alias in a free value", "free: {a: &x 1, b: *x}\n", Options{}, []string{`t.yaml:1:11: free.a: anchors and aliases are not allowed`, `t.yaml:1:20: free.b: anchors and aliases are not allowed`}},
		{"hint for an unknown key", "secretToken: x\n", Options{UnknownKey: func(t reflect.Type, key string) string {
			if strings.Contains(strings.ToLower(key), "secret") {
				return "never write a secret here"
			}
			return ""
		}}, []string{`t.yaml:1:1: secretToken: never write a secret here`}},
		{"one scalar is not a list unless allowed", "inner: {tags: x}\n", Options{}, []string{`t.yaml:1:15: inner.tags: want a list, got "x"`}},
		{"syntax error", "title: [\n", Options{}, []string{`t.yaml:1:1: did not find expected node content`}},
		{"two documents", "title: a\n---\ntitle: b\n", Options{}, []string{`t.yaml:2:1: a file holds one document`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, _, err := decode(t, tc.src, tc.opts)
			require.Error(t, err)
			require.ErrorIs(t, err, errTest)
			var e *Error
			require.ErrorAs(t, err, &e)
			var got []string
			for _, p := range e.Problems {
				got = append(got, p.String())
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestDecodeOptions(t *testing.T) {
	t.Parallel()
	got, _, err := decode(t, "inner: {name: &n x}\ntitle: *n\nopt: ~\nlabels: ~\n", Options{AllowAliases: true, NullIsZero: true})
	require.NoError(t, err)
	assert.Equal(t, "x", got.Title, "aliases are followed when allowed")
	assert.Nil(t, got.Opt)
	assert.Nil(t, got.Labels, "null is the zero value when allowed")

	got, _, err = decode(t, "inner: {tags: solo}\n", Options{OneAsList: true})
	require.NoError(t, err)
	assert.Equal(t, []string{"solo"}, got.Inner.Tags)
}

// TestFiles: nodes marked as coming from another file (an included
// fragment) report problems and positions there.
func TestFiles(t *testing.T) {
	t.Parallel()
	root, prob := ParseDocument([]byte("title: x\n"), "main.yaml")
	require.Nil(t, prob)
	part, prob := ParseDocument([]byte("\n\n  name: 5\n  extra: y\n"), "part.yaml")
	require.Nil(t, prob)
	root.Content = append(root.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: "inner", Tag: "!!str", Line: 1, Column: 1}, part)
	d := NewDecoder(Options{File: "main.yaml"})
	d.MarkFile(part, "part.yaml")
	var out doc
	d.Decode(root, &out, "")
	require.Len(t, d.Problems(), 1)
	assert.Equal(t, `part.yaml:4:3: inner.extra: unknown key (known: count, name, on, ratio, tags)`, d.Problems()[0].String())
	assert.Equal(t, "part.yaml:3:3", d.PosOf("inner.name").String("main.yaml"))
	assert.Equal(t, "5", out.Inner.Name, "a number is text where text is wanted")
}

func TestChildSharesProblems(t *testing.T) {
	t.Parallel()
	root, _ := ParseDocument([]byte("inner: {name: a}\n"), "t.yaml")
	d := NewDecoder(Options{File: "t.yaml"})
	c := d.Child(nil)
	var out doc
	c.Decode(root, &out, "")
	c.Errorf("inner.name", "bad name")
	require.Len(t, d.Problems(), 1)
	assert.Equal(t, "t.yaml:1:9: inner.name: bad name", d.Problems()[0].String())
}

func TestSuggest(t *testing.T) {
	t.Parallel()
	known := []string{"devices", "device", "timeout", "steps"}
	for in, want := range map[string]string{"devic": "device", "DEVICES": "devices", "stpes": "steps", "xyz": "", "timeoutt": "timeout"} {
		assert.Equal(t, want, Suggest(in, known), in)
	}
	assert.Equal(t, 3, EditDistance("kitten", "sitting"))
	assert.Equal(t, 1, EditDistance("日本", "日"), "runes, not bytes")
	assert.Equal(t, 99, EditDistance(strings.Repeat("a", 65), "a"))
}

func TestProblemString(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "f.yaml:3:4: a.b: bad", Problem{File: "f.yaml", Line: 3, Col: 4, Path: "a.b", Msg: "bad"}.String())
	assert.Equal(t, "f.yaml:3: bad", Problem{File: "f.yaml", Line: 3, Msg: "bad"}.String())
	assert.Equal(t, "<document>: bad", Problem{Msg: "bad"}.String())
	e := &Error{Problems: []Problem{{File: "f", Msg: "one"}, {File: "f", Msg: "two"}}, Kind: errTest}
	assert.Equal(t, "f: one\nf: two", e.Error())
	assert.ErrorIs(t, e, errTest)
}

// FuzzDecode: decoding never panics, every problem has a position, and a
// document that decodes cleanly decodes cleanly again.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{"title: x\n", "inner: {count: 3, tags: [a]}\n", "list: [{name: a}, {nmae: b}]\n", "free: {a: [1, {b: ~}]}\n",
		"a: &x 1\nb: *x\n", "labels: {a: b, a: c}\n", "[1, 2]\n", "wait: 1s\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		root, prob := ParseDocument(data, "f.yaml")
		if prob != nil || root == nil {
			return
		}
		d := NewDecoder(Options{File: "f.yaml", Types: map[reflect.Type]DecodeFunc{reflect.TypeFor[dur](): decodeDur}})
		var out doc
		d.Decode(root, &out, "")
		for _, p := range d.Problems() {
			if p.Line == 0 {
				t.Fatalf("problem without a line: %s", p)
			}
		}
		if len(d.Problems()) > 0 {
			return
		}
		d2 := NewDecoder(Options{File: "f.yaml", Types: map[reflect.Type]DecodeFunc{reflect.TypeFor[dur](): decodeDur}})
		var again doc
		d2.Decode(root, &again, "")
		if len(d2.Problems()) > 0 {
			t.Fatalf("decoded once, not twice: %v", d2.Err(errTest))
		}
	})
}
