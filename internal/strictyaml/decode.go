// Package strictyaml is the project's one strict YAML decoder, used by
// the lab's configuration (lab/config), the scenario language
// (lab/scenario) and model scripts (runtime/model/script).
//
// A Decoder walks a yaml.Node tree into Go values by their `yaml` tags.
// Every unknown or repeated key, wrong type and (unless allowed) alias is
// a Problem at the file:line:column where it was written, an unknown key
// close to a known one says "did you mean", and decoding goes on after a
// problem so that one pass reports everything. Types with YAML forms of
// their own (durations, shorthands) decode through Options.Types; the
// caller validates the decoded value afterwards and reports its findings
// through the same Decoder, at the positions it recorded (Decoder.Pos).
//
// internal/yamlschema builds JSON Schemas of the same types, so the
// schemas editors use are generated from the Go types.
package strictyaml

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"gopkg.in/yaml.v3"
)

// DecodeFunc decodes n into v (addressable, of the type it is registered
// for); path names v in problems.
type DecodeFunc func(d *Decoder, n *yaml.Node, v reflect.Value, path string)

// Options tune a Decoder. The zero value is the strictest.
type Options struct {
	// File names the document in problems.
	File string
	// Types decode values of these types instead of the generic rules.
	Types map[reflect.Type]DecodeFunc
	// AllowAliases follows aliases (and accepts anchors); otherwise both
	// are problems.
	AllowAliases bool
	// NullIsZero lets null stand for the zero value of any field;
	// otherwise null is accepted only for pointers (left nil).
	NullIsZero bool
	// OneAsList lets a single scalar stand for a list of one string
	// ("reset: notes" for "reset: [notes]").
	OneAsList bool
	// UnknownKey, when set, may word the problem of an unknown key of a
	// struct of type t (a hint that a secret does not belong there);
	// returning "" keeps the default "unknown key" problem.
	UnknownKey func(t reflect.Type, key string) string
}

// Decoder decodes yaml.Node trees strictly. It is not safe for
// concurrent use.
type Decoder struct {
	opts Options
	st   *state
}

// state is what a Decoder and its children share.
type state struct {
	// pos maps the path of every field, map entry and list element that
	// was written ("steps[2].wait.timeout") to where its key (of the
	// element, for lists) was written.
	pos      map[string]Pos
	problems []Problem
	// files are the nodes that came from another file than the
	// document's (included fragments).
	files map[*yaml.Node]string
}

// NewDecoder returns a Decoder with opts.
func NewDecoder(opts Options) *Decoder {
	return &Decoder{opts: opts, st: &state{pos: map[string]Pos{}, files: map[*yaml.Node]string{}}}
}

// Child returns a decoder with other types that records its positions
// and problems with d's, for a document embedded in another (a model
// script inside a scenario).
func (d *Decoder) Child(types map[reflect.Type]DecodeFunc) *Decoder {
	o := d.opts
	o.Types = types
	return &Decoder{opts: o, st: d.st}
}

// File is the document's name.
func (d *Decoder) File() string { return d.opts.File }

// MarkFile says that the nodes under n were read from file (a fragment
// included into the document): their problems and positions name it.
func (d *Decoder) MarkFile(n *yaml.Node, file string) {
	d.st.files[n] = file
	for _, c := range n.Content {
		d.MarkFile(c, file)
	}
}

// CopyMark gives to the file mark of from (a copy of a marked node).
func (d *Decoder) CopyMark(from, to *yaml.Node) {
	if f, ok := d.st.files[from]; ok {
		d.st.files[to] = f
	}
}

// Add records a problem found elsewhere (a syntax error of an included
// file).
func (d *Decoder) Add(p Problem) { d.st.problems = append(d.st.problems, p) }

func (d *Decoder) posOf(n *yaml.Node) Pos {
	return Pos{File: d.st.files[n], Line: n.Line, Col: n.Column}
}

// Problems returns the problems found so far, in the order found.
func (d *Decoder) Problems() []Problem { return d.st.problems }

// Positions returns the path → position map of what was written.
func (d *Decoder) Positions() map[string]Pos { return d.st.pos }

func (d *Decoder) add(at Pos, path, msg string) {
	file := at.File
	if file == "" {
		file = d.opts.File
	}
	d.st.problems = append(d.st.problems, Problem{File: file, Line: at.Line, Col: at.Col, Path: path, Msg: msg})
}

// Addf records a problem at n's position (the document's, when n is nil).
func (d *Decoder) Addf(n *yaml.Node, path, format string, args ...any) {
	var at Pos
	if n != nil {
		at = d.posOf(n)
	}
	d.add(at, path, sprintf(format, args...))
}

// Errorf records a problem at the position of path, or of the nearest
// field above it that was written.
func (d *Decoder) Errorf(path, format string, args ...any) {
	d.add(d.PosOf(path), path, sprintf(format, args...))
}

// PosOf is where path, or the nearest field above it, was written.
func (d *Decoder) PosOf(path string) Pos {
	for q := path; ; q = Parent(q) {
		if at, ok := d.st.pos[q]; ok {
			return at
		}
		if q == "" {
			return Pos{}
		}
	}
}

// Has reports whether path was written.
func (d *Decoder) Has(path string) bool {
	_, ok := d.st.pos[path]
	return ok
}

// HasProblem reports whether a problem names path.
func (d *Decoder) HasProblem(path string) bool {
	for _, p := range d.st.problems {
		if p.Path == path {
			return true
		}
	}
	return false
}

// HasProblemUnder reports whether a problem names path or a field under
// it.
func (d *Decoder) HasProblemUnder(path string) bool {
	for _, p := range d.st.problems {
		if p.Path == path || strings.HasPrefix(p.Path, path+".") || strings.HasPrefix(p.Path, path+"[") {
			return true
		}
	}
	return false
}

// Err returns the problems found, sorted, as an *Error wrapping kind; nil
// when there are none.
func (d *Decoder) Err(kind error) error {
	if len(d.st.problems) == 0 {
		return nil
	}
	ps := slices.Clone(d.st.problems)
	SortProblems(ps)
	return &Error{Problems: ps, Kind: kind}
}

// Record notes that path was written at n.
func (d *Decoder) Record(path string, n *yaml.Node) {
	if n != nil {
		d.st.pos[path] = d.posOf(n)
	}
}

// Decode decodes n into what ptr points to.
func (d *Decoder) Decode(n *yaml.Node, ptr any, path string) {
	d.DecodeValue(n, reflect.ValueOf(ptr).Elem(), path)
}

// deref follows an alias when they are allowed, else reports it.
func (d *Decoder) deref(n *yaml.Node, path string) (*yaml.Node, bool) {
	if n.Kind == yaml.AliasNode || n.Anchor != "" {
		if !d.opts.AllowAliases {
			d.Addf(n, path, "anchors and aliases are not allowed")
			return nil, false
		}
		for n.Kind == yaml.AliasNode && n.Alias != nil {
			n = n.Alias
		}
	}
	return n, true
}

// DecodeValue decodes n into v (addressable).
func (d *Decoder) DecodeValue(n *yaml.Node, v reflect.Value, path string) {
	n, ok := d.deref(n, path)
	if !ok {
		return
	}
	if f := d.opts.Types[v.Type()]; f != nil {
		f(d, n, v, path)
		return
	}
	if v.Kind() == reflect.Pointer {
		if IsNull(n) {
			return
		}
		nv := reflect.New(v.Type().Elem())
		before := len(d.st.problems)
		d.DecodeValue(n, nv.Elem(), path)
		if len(d.st.problems) == before {
			v.Set(nv)
		}
		return
	}
	if d.opts.NullIsZero && IsNull(n) {
		v.SetZero()
		return
	}
	switch v.Kind() {
	case reflect.Struct:
		d.DecodeStruct(n, v, path)
	case reflect.Slice:
		d.decodeSlice(n, v, path)
	case reflect.Map:
		d.decodeMap(n, v, path)
	case reflect.String:
		if s, ok := d.ScalarString(n, path); ok {
			v.SetString(s)
		}
	case reflect.Bool:
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" {
			d.Addf(n, path, "want true or false, got %s", Describe(n))
			return
		}
		b, _ := strconv.ParseBool(strings.ToLower(n.Value))
		v.SetBool(b)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" {
			d.Addf(n, path, "want an integer, got %s", Describe(n))
			return
		}
		bits := v.Type().Bits()
		if v.Kind() == reflect.Int {
			bits = 32 // the same on every platform the lab runs on
		}
		i, err := strconv.ParseInt(n.Value, 0, bits)
		if err != nil {
			d.Addf(n, path, "integer out of range: %s", n.Value)
			return
		}
		v.SetInt(i)
	case reflect.Float32, reflect.Float64:
		f, ok := Number(n)
		if !ok {
			d.Addf(n, path, "want a number, got %s", Describe(n))
			return
		}
		v.SetFloat(f)
	case reflect.Interface:
		if x, ok := d.Any(n, path); ok && x != nil {
			v.Set(reflect.ValueOf(x))
		}
	default:
		panic("strictyaml: no decoding for " + v.Type().String())
	}
}

// IsNull reports whether n is a null scalar.
func IsNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// Number is n as a finite number, if it is one.
func Number(n *yaml.Node) (float64, bool) {
	if n.Kind != yaml.ScalarNode || (n.ShortTag() != "!!int" && n.ShortTag() != "!!float") {
		return 0, false
	}
	var f float64
	if err := n.Decode(&f); err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}

// ScalarString accepts any non-null scalar as text (a number or a bool in
// an argument list is meant as its text).
func (d *Decoder) ScalarString(n *yaml.Node, path string) (string, bool) {
	if n.Kind != yaml.ScalarNode || IsNull(n) {
		d.Addf(n, path, "want a string, got %s", Describe(n))
		return "", false
	}
	return n.Value, true
}

// Describe words what n is, for "want X, got Y".
func Describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	}
	switch n.ShortTag() {
	case "!!null":
		return "nothing (null)"
	case "!!str":
		return strconv.Quote(Clip(n.Value, 40))
	}
	return Clip(n.Value, 40)
}

// field is one YAML key of a struct, possibly inside an inlined struct.
type field struct {
	index []int
	typ   reflect.Type
}

// fieldSet is a struct type's keys, in declaration order.
type fieldSet struct {
	byKey map[string]field
	keys  []string
}

var fieldCache sync.Map // reflect.Type → *fieldSet

func fieldsOf(t reflect.Type) *fieldSet {
	if m, ok := fieldCache.Load(t); ok {
		return m.(*fieldSet)
	}
	fs := &fieldSet{byKey: map[string]field{}}
	var walk func(t reflect.Type, prefix []int)
	walk = func(t reflect.Type, prefix []int) {
		for i := range t.NumField() {
			f := t.Field(i)
			tag, hasTag := f.Tag.Lookup("yaml")
			name, opt, _ := strings.Cut(tag, ",")
			idx := append(slices.Clone(prefix), i)
			if opt == "inline" && f.Type.Kind() == reflect.Struct {
				walk(f.Type, idx)
				continue
			}
			if tag == "-" || !f.IsExported() {
				continue
			}
			if !hasTag || name == "" {
				panic("strictyaml: field without a yaml name: " + t.String() + "." + f.Name)
			}
			if _, dup := fs.byKey[name]; dup {
				panic("strictyaml: yaml name used twice: " + t.String() + "." + name)
			}
			fs.byKey[name] = field{index: idx, typ: f.Type}
			fs.keys = append(fs.keys, name)
		}
	}
	walk(t, nil)
	fieldCache.Store(t, fs)
	return fs
}

// Keys returns the YAML keys of struct type t (inlined structs
// flattened), sorted.
func Keys(t reflect.Type) []string {
	out := slices.Clone(fieldsOf(t).keys)
	slices.Sort(out)
	return out
}

// Field is one YAML key of a struct type.
type Field struct {
	Key string
	// Index is the field's index for reflect.Value.FieldByIndex (through
	// inlined structs).
	Index []int
	Type  reflect.Type
}

// Fields returns the YAML keys of struct type t, inlined structs
// flattened, in declaration order.
func Fields(t reflect.Type) []Field {
	fs := fieldsOf(t)
	out := make([]Field, len(fs.keys))
	for i, k := range fs.keys {
		f := fs.byKey[k]
		out[i] = Field{Key: k, Index: slices.Clone(f.index), Type: f.typ}
	}
	return out
}

// FieldIndex is the index (for reflect.Value.FieldByIndex) of t's field
// with YAML key key.
func FieldIndex(t reflect.Type, key string) ([]int, bool) {
	f, ok := fieldsOf(t).byKey[key]
	return f.index, ok
}

// DecodeStruct decodes mapping n into struct v field by field, for
// DecodeFuncs that accept a shorthand and otherwise decode the struct.
func (d *Decoder) DecodeStruct(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.MappingNode {
		d.Addf(n, path, "want a mapping, got %s", Describe(n))
		return
	}
	fs := fieldsOf(v.Type())
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			d.Addf(k, path, "keys must be strings")
			continue
		}
		key := k.Value
		kp := Join(path, key)
		if first, dup := seen[key]; dup {
			d.Addf(k, kp, "repeated key (first at line %d)", first)
			continue
		}
		seen[key] = k.Line
		f, ok := fs.byKey[key]
		if !ok {
			d.unknownKey(k, v.Type(), kp)
			continue
		}
		d.Record(kp, k)
		d.DecodeValue(val, v.FieldByIndex(f.index), kp)
	}
}

func (d *Decoder) unknownKey(k *yaml.Node, t reflect.Type, path string) {
	if d.opts.UnknownKey != nil {
		if msg := d.opts.UnknownKey(t, k.Value); msg != "" {
			d.Addf(k, path, "%s", msg)
			return
		}
	}
	d.Addf(k, path, "%s", UnknownKey(k.Value, Keys(t)))
}

// UnknownKey words the problem of an unknown key: a "did you mean" when
// one of known is close, else the known keys.
func UnknownKey(key string, known []string) string {
	if s := Suggest(key, known); s != "" {
		return fmt.Sprintf("unknown key (did you mean %q?)", s)
	}
	return "unknown key (known: " + strings.Join(known, ", ") + ")"
}

func (d *Decoder) decodeSlice(n *yaml.Node, v reflect.Value, path string) {
	if d.opts.OneAsList && n.Kind == yaml.ScalarNode && !IsNull(n) && v.Type().Elem().Kind() == reflect.String &&
		d.opts.Types[v.Type().Elem()] == nil {
		v.Set(reflect.Append(reflect.MakeSlice(v.Type(), 0, 1), reflect.ValueOf(n.Value).Convert(v.Type().Elem())))
		return
	}
	if n.Kind != yaml.SequenceNode {
		d.Addf(n, path, "want a list, got %s", Describe(n))
		return
	}
	s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
	for i, e := range n.Content {
		ip := Index(path, i)
		d.Record(ip, e)
		d.DecodeValue(e, s.Index(i), ip)
	}
	v.Set(s)
}

func (d *Decoder) decodeMap(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.MappingNode {
		d.Addf(n, path, "want a mapping, got %s", Describe(n))
		return
	}
	if v.Type().Key().Kind() != reflect.String {
		panic("strictyaml: map keys must be strings: " + v.Type().String())
	}
	m := reflect.MakeMapWithSize(v.Type(), len(n.Content)/2)
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			d.Addf(k, path, "keys must be strings")
			continue
		}
		kp := Join(path, k.Value)
		if first, dup := seen[k.Value]; dup {
			d.Addf(k, kp, "repeated key (first at line %d)", first)
			continue
		}
		seen[k.Value] = k.Line
		d.Record(kp, k)
		e := reflect.New(v.Type().Elem()).Elem()
		d.DecodeValue(val, e, kp)
		m.SetMapIndex(reflect.ValueOf(k.Value).Convert(v.Type().Key()), e)
	}
	v.Set(m)
}

// MaxDepth bounds the nesting of free-form values.
const MaxDepth = 32

// Any decodes n as its JSON equivalent: nil, bool, float64, string,
// []any or map[string]any. Timestamps and other scalars YAML would turn
// into Go types stay the text that was written.
func (d *Decoder) Any(n *yaml.Node, path string) (any, bool) { return d.anyValue(n, path, 0) }

func (d *Decoder) anyValue(n *yaml.Node, path string, depth int) (any, bool) {
	if depth > MaxDepth {
		d.Addf(n, path, "value nested deeper than %d levels", MaxDepth)
		return nil, false
	}
	n, ok := d.deref(n, path)
	if !ok {
		return nil, false
	}
	switch n.Kind {
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		ok := true
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Kind != yaml.ScalarNode {
				d.Addf(k, path, "keys must be strings")
				ok = false
				continue
			}
			if _, dup := m[k.Value]; dup {
				d.Addf(k, Join(path, k.Value), "repeated key")
				ok = false
				continue
			}
			e, eok := d.anyValue(n.Content[i+1], Join(path, k.Value), depth+1)
			ok = ok && eok
			m[k.Value] = e
		}
		return m, ok
	case yaml.SequenceNode:
		l := make([]any, len(n.Content))
		ok := true
		for i, e := range n.Content {
			var eok bool
			l[i], eok = d.anyValue(e, Index(path, i), depth+1)
			ok = ok && eok
		}
		return l, ok
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			return nil, true
		case "!!bool":
			b, _ := strconv.ParseBool(strings.ToLower(n.Value))
			return b, true
		case "!!int", "!!float":
			f, ok := Number(n)
			if !ok {
				d.Addf(n, path, "not a finite number: %s", n.Value)
				return nil, false
			}
			return f, true
		case "!!str", "!!timestamp", "!!binary":
			return n.Value, true
		}
		d.Addf(n, path, "unsupported value %s", Describe(n))
		return nil, false
	}
	d.Addf(n, path, "unsupported value")
	return nil, false
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// ParseDocument reads exactly one YAML document and returns its root
// node: nil for an empty document, possibly a null scalar. A syntax error
// (or a second document) is returned as a Problem of file, at its line.
// The parser's panics on hostile input become problems too.
func ParseDocument(data []byte, file string) (root *yaml.Node, prob *Problem) {
	n, err := parseYAML(data)
	if err == nil {
		return n, nil
	}
	p := &Problem{File: file, Msg: strings.TrimPrefix(err.Error(), "yaml: ")}
	if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
		p.Line, _ = strconv.Atoi(m[1])
		p.Col, p.Msg = 1, m[2]
	}
	return nil, p
}

func parseYAML(data []byte) (n *yaml.Node, err error) {
	defer func() {
		if r := recover(); r != nil {
			n, err = nil, fmt.Errorf("yaml: %v", r)
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, err
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, fmt.Errorf("yaml: line %d: a file holds one document", extra.Line)
	} else if !errors.Is(err, io.EOF) {
		return nil, err
	}
	if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		return doc.Content[0], nil
	}
	return nil, nil
}
